package hub

import (
	"fmt"

	"github.com/cotrain/cotrain/sync/wire"
)

// The battery floor (Config.BatteryFloor): a worker whose battery is
// discharging below the floor gets no batch, so that co-training does not
// empty a phone its owner still needs. The core learns a worker's battery
// from what the worker reports — its Register, each Push, and a Status
// when it changes between pushes (a parked worker pushes nothing) — and
// never reads a clock or a file: the worker's driver reads the system's
// power_supply folder (worker.PowerSupply).
//
// A worker parked for its battery is weighed again at every iteration that
// opens: it gets a batch at the first open after it reported charging,
// full, or a level at or above the floor. The adaptive policy's parking
// (park.go) weighs only the workers the floor leaves in. When the floor
// parks every live worker, nothing can open: the run waits (phaseParked,
// EventParked) until a Status or a new worker brings one back.

// noteBattery records what p reported (a zero Battery, from a worker that
// reports none, leaves the last one) and emits EventBattery when it
// differs from what p reported before.
func (c *Core) noteBattery(p *peer, b wire.Battery) {
	if b.IsZero() || b == p.battery {
		return
	}
	p.battery = b
	c.event(Event{Kind: EventBattery, Peer: p.id, Iteration: c.iter, Battery: b, Text: b.String()})
}

// status handles a worker's Status: its battery changed. A run waiting
// because every worker was parked for its battery opens again when this
// worker no longer is.
func (c *Core) status(p *peer, m *wire.Status) {
	c.noteBattery(p, m.Battery)
	if c.phase == phaseParked && len(c.order) > 0 && !c.batteryLow(p) {
		c.open(c.order, true)
	}
}

// batteryLow reports whether p is to be parked for its battery: the floor
// is on and p's battery is known, discharging and below it.
func (c *Core) batteryLow(p *peer) bool {
	return c.cfg.BatteryFloor > 0 && p.battery.Discharging() && float64(p.battery.Percent) < c.cfg.BatteryFloor
}

// batteryPark updates whether p is parked for its battery (low: it is to
// be), with an event for every change.
func (c *Core) batteryPark(p *peer, low bool) {
	if p.low == low {
		return
	}
	p.low = low
	if low {
		c.event(Event{Kind: EventWorkerParked, Peer: p.id, Iteration: c.iter, Text: fmt.Sprintf(
			"battery %s, below the floor of %g%%", p.battery, c.cfg.BatteryFloor)})
		return
	}
	c.event(Event{Kind: EventWorkerResumed, Peer: p.id, Iteration: c.iter, Text: fmt.Sprintf(
		"battery %s (floor %g%%)", p.battery, c.cfg.BatteryFloor)})
}
