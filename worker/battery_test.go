package worker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/sync/wire"
)

// writeFiles makes the files of m (path relative to dir → content).
func writeFiles(t *testing.T, dir string, m map[string]string) {
	t.Helper()
	for name, text := range m {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPowerSupply reads fake power_supply folders laid out as a laptop's,
// an Android phone's and a desktop's.
func TestPowerSupply(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		sub   string // Dir below the fake folder
		want  wire.Battery
		err   error // wrapped, or nil
	}{
		{"laptop discharging", map[string]string{"AC/type": "Mains", "AC/online": "0",
			"BAT0/type": "Battery", "BAT0/capacity": "15", "BAT0/status": "Discharging"}, "",
			wire.Battery{Percent: 15, Status: wire.BatteryDischarging}, nil},
		{"android charging", map[string]string{"usb/type": "USB", "usb/online": "1",
			"battery/type": "Battery", "battery/capacity": "42", "battery/status": "Charging"}, "",
			wire.Battery{Percent: 42, Status: wire.BatteryCharging}, nil},
		{"full", map[string]string{"BAT1/type": "Battery", "BAT1/capacity": "100", "BAT1/status": "Full"}, "",
			wire.Battery{Percent: 100, Status: wire.BatteryFull}, nil},
		{"not charging", map[string]string{"BAT1/type": "Battery", "BAT1/capacity": "80", "BAT1/status": "Not charging"}, "",
			wire.Battery{Percent: 80, Status: wire.BatteryNotCharging}, nil},
		{"status unknown, charger online", map[string]string{"ac/type": "Mains", "ac/online": "1",
			"battery/type": "Battery", "battery/capacity": "7", "battery/status": "Unknown"}, "",
			wire.Battery{Percent: 7, Status: wire.BatteryCharging}, nil},
		{"no status, no charger", map[string]string{"battery/type": "Battery", "battery/capacity": "7"}, "",
			wire.Battery{Percent: 7}, nil},
		{"the first battery by name", map[string]string{"BAT1/type": "Battery", "BAT1/capacity": "90", "BAT1/status": "Discharging",
			"BAT0/type": "Battery", "BAT0/capacity": "30", "BAT0/status": "Discharging"}, "",
			wire.Battery{Percent: 30, Status: wire.BatteryDischarging}, nil},
		{"one supply's folder", map[string]string{"BAT0/type": "Battery", "BAT0/capacity": "55", "BAT0/status": "Charging"}, "BAT0",
			wire.Battery{Percent: 55, Status: wire.BatteryCharging}, nil},
		{"desktop", map[string]string{"AC/type": "Mains", "AC/online": "1"}, "", wire.Battery{}, ErrNoBattery},
		{"no folder", map[string]string{}, "missing", wire.Battery{}, ErrNoBattery},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			got, err := PowerSupply{Dir: filepath.Join(dir, c.sub)}.Read()
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("Read: %v, want %v", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Read = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	t.Run("bad level", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"BAT0/type": "Battery", "BAT0/capacity": "lots", "BAT0/status": "Full"})
		if b, err := (PowerSupply{Dir: dir}).Read(); err == nil {
			t.Fatalf("Read = %+v, want an error for a level that is not a number", b)
		}
	})
}

// TestCoreBattery: the Register carries Config.Battery; pushes carry the
// latest SetBattery; a Status goes out only to a hub that takes them
// (Session.Status), only after the Welcome, and only when the status or
// the whole percentage changed since the hub last heard.
func TestCoreBattery(t *testing.T) {
	for _, takes := range []bool{false, true} {
		f := newFakeHub(t)
		cfg := DefaultConfig()
		cfg.Battery = wire.Battery{Percent: 15, Status: wire.BatteryDischarging}
		c, err := NewCore(cfg, cpu.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		rd := take(c)
		if r := rd.Messages[0].(*wire.Register); r.Battery != cfg.Battery {
			t.Fatalf("Register battery %+v, want %+v", r.Battery, cfg.Battery)
		}
		c.SetBattery(wire.Battery{Percent: 14, Status: wire.BatteryDischarging})
		if rd := take(c); len(rd.Messages) != 0 {
			t.Fatalf("before the Welcome: sent %v", kinds(rd.Messages))
		}
		w := f.welcome(0)
		w.Session.Status = takes
		if err := c.Step("hub", w); err != nil {
			t.Fatal(err)
		}
		take(c)
		steps := []struct {
			b    wire.Battery
			sent bool
		}{
			{wire.Battery{Percent: 14.6, Status: wire.BatteryDischarging}, true}, // the hub heard 15 at registration
			{wire.Battery{Percent: 14.2, Status: wire.BatteryDischarging}, false},
			{wire.Battery{Percent: 14.2, Status: wire.BatteryCharging}, true},
			{wire.Battery{Percent: 15.0, Status: wire.BatteryCharging}, true},
		}
		for _, s := range steps {
			c.SetBattery(s.b)
			rd := take(c)
			sent := len(rd.Messages) == 1 && rd.Messages[0].(*wire.Status).Battery == s.b
			if sent != (s.sent && takes) || (!sent && len(rd.Messages) != 0) {
				t.Fatalf("hub takes Status %v, SetBattery(%+v): sent %v, want a Status %v", takes, s.b, kinds(rd.Messages), s.sent && takes)
			}
		}
		// The next push carries the latest reading.
		if err := c.Step("hub", f.merged(0.01, 4)); err != nil {
			t.Fatal(err)
		}
		rd = take(c)
		if err := c.Computed(compute(t, c, rd.Compute)); err != nil {
			t.Fatal(err)
		}
		rd = take(c)
		if p, ok := rd.Messages[0].(*wire.Push); !ok || p.Battery != c.Battery() || c.Battery() != steps[len(steps)-1].b {
			t.Fatalf("push %v with battery %+v, want %+v", kinds(rd.Messages), rd.Messages[0], steps[len(steps)-1].b)
		}
	}
}
