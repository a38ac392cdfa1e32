package wire

import (
	"bytes"
	"math"
	"testing"
)

// TestBatteryOmittedWhenUnknown: a worker that knows no battery sends the
// frames it sent before the field existed (an older hub reads them as
// always), and one that knows it sends the key; both decode to what was
// sent.
func TestBatteryOmittedWhenUnknown(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Message
		key  bool
	}{
		{"register without", &Register{Device: "d"}, false},
		{"register with", &Register{Device: "d", Battery: Battery{Percent: 0, Status: BatteryDischarging}}, true},
		{"push without", &Push{Samples: 1}, false},
		{"push with", &Push{Samples: 1, Battery: Battery{Percent: 100, Status: BatteryFull}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := frameBytes(t, c.m)
			if got := bytes.Contains(b, []byte("battery")); got != c.key {
				t.Fatalf("frame has the battery key: %v, want %v", got, c.key)
			}
			d, err := ReadFrame(bytes.NewReader(b), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			var want, got Battery
			switch m := c.m.(type) {
			case *Register:
				want, got = m.Battery, d.(*Register).Battery
			case *Push:
				want, got = m.Battery, d.(*Push).Battery
			}
			if got != want {
				t.Fatalf("decoded battery %+v, want %+v", got, want)
			}
		})
	}
}

// TestBatteryKnown: only a known status with a percentage in [0, 100]
// counts; a newer peer's status number, NaN or 140% is unknown.
func TestBatteryKnown(t *testing.T) {
	for _, c := range []struct {
		b                  Battery
		known, discharging bool
		str                string
	}{
		{Battery{}, false, false, "unknown"},
		{Battery{Percent: 15, Status: BatteryDischarging}, true, true, "15% discharging"},
		{Battery{Percent: 0, Status: BatteryDischarging}, true, true, "0% discharging"},
		{Battery{Percent: 15, Status: BatteryCharging}, true, false, "15% charging"},
		{Battery{Percent: 100, Status: BatteryFull}, true, false, "100% full"},
		{Battery{Percent: 80, Status: BatteryNotCharging}, true, false, "80% not-charging"},
		{Battery{Percent: 50, Status: 9}, false, false, "unknown"},
		{Battery{Percent: 140, Status: BatteryDischarging}, false, false, "unknown"},
		{Battery{Percent: -1, Status: BatteryDischarging}, false, false, "unknown"},
		{Battery{Percent: float32(math.NaN()), Status: BatteryDischarging}, false, false, "unknown"},
	} {
		if c.b.Known() != c.known || c.b.Discharging() != c.discharging || c.b.String() != c.str {
			t.Errorf("%+v: known %v, discharging %v, %q; want %v, %v, %q", c.b,
				c.b.Known(), c.b.Discharging(), c.b.String(), c.known, c.discharging, c.str)
		}
	}
}
