package wire

import (
	"fmt"
	"math"
)

// This file is the battery a worker reports (Register, Push, Status), and
// the power it may declare.

// The Register.Info keys of a worker's declared power, in watts (decimal
// numbers): what training draws on it above idle, and what its radio draws
// while it sends. A hub's energy policy weighs them (hub/energy.go).
const (
	InfoComputeWatts = "compute_w"
	InfoRadioWatts   = "radio_w"
)

// BatteryStatus is what a phone's system says its battery is doing, as the
// Linux and Android power_supply class names it in its "status" file. The
// numbers are part of the protocol: never renumber, only append. A
// receiver treats a number it does not know as BatteryUnknown.
type BatteryStatus uint8

// The battery statuses.
const (
	BatteryUnknown     BatteryStatus = iota // not reported, or the system does not know
	BatteryDischarging                      // running on the battery
	BatteryCharging                         // on a charger, charging
	BatteryFull                             // on a charger, full
	BatteryNotCharging                      // on a charger, not charging (a charge limit, heat)
)

var batteryNames = [...]string{"unknown", "discharging", "charging", "full", "not-charging"}

// String returns "discharging", "charging", … or "status(N)".
func (s BatteryStatus) String() string {
	if int(s) < len(batteryNames) {
		return batteryNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Battery is a worker's battery as its system reports it. The zero Battery
// means unknown (a desktop, a system that exposes none, an older worker):
// it is left out of the frame (omitempty, through IsZero).
type Battery struct {
	// Percent is the charge level, 0 to 100.
	Percent float32 `msgpack:"pct"`
	// Status is what the battery is doing.
	Status BatteryStatus `msgpack:"status"`
}

// IsZero reports whether b is the zero Battery (unknown). msgpack's
// omitempty asks it.
func (b Battery) IsZero() bool { return b == Battery{} }

// Known reports whether b holds a level a hub may act on: a status the
// receiver knows other than unknown, and a finite percentage in [0, 100].
// A peer's figures are not trusted further than that.
func (b Battery) Known() bool {
	p := float64(b.Percent)
	return b.Status > BatteryUnknown && b.Status <= BatteryNotCharging &&
		!math.IsNaN(p) && p >= 0 && p <= 100
}

// Discharging reports whether b is known and running on the battery.
func (b Battery) Discharging() bool { return b.Known() && b.Status == BatteryDischarging }

// String returns "15% discharging", or "unknown".
func (b Battery) String() string {
	if !b.Known() {
		return "unknown"
	}
	return fmt.Sprintf("%.0f%% %s", b.Percent, b.Status)
}
