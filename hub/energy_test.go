package hub_test

import (
	"testing"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/wire"
)

// TestEnergySplit: the energy policy with paper-table1's two phones as
// they declare themselves (sim/energy.go: the Nexus 6P 128 samples/s at
// 5.8 W, the Meizu MX3 22.9 samples/s at 7.1 W). With slack 1.5 the Nexus
// can do the whole batch within 1.5 times the adaptive iteration, so the
// Meizu, whose samples cost seven times as much, is spared; with slack 1
// the split is the adaptive one; a Meizu on a charger costs the battery
// nothing and is filled first, up to what it can do in the time allowed;
// and without declared power the policy is adaptive.
func TestEnergySplit(t *testing.T) {
	nexus := wire.Register{Device: "nexus", Speed: 128, Info: map[string]string{wire.InfoComputeWatts: "5.78", wire.InfoRadioWatts: "0.37"}}
	meizu := wire.Register{Device: "meizu", Speed: 22.86, Info: map[string]string{wire.InfoComputeWatts: "7.07", wire.InfoRadioWatts: "1.28"}}
	adaptive := make([]int, 2)
	hub.SplitThroughput(adaptive, 64, []float64{128, 22.86})
	charging := meizu
	charging.Battery = wire.Battery{Percent: 50, Status: wire.BatteryCharging}
	bare := meizu
	bare.Info = nil
	bareNexus := nexus
	bareNexus.Info = nil
	for _, c := range []struct {
		name         string
		slack        float64
		w0, w1       wire.Register
		want0, want1 int
	}{
		{"slack 1.5 spares the Meizu", 1.5, nexus, meizu, 64, 0},
		{"slack 1 is adaptive", 1, nexus, meizu, adaptive[0], adaptive[1]},
		{"a Meizu on a charger goes first", 1.5, nexus, charging, 50, 14},
		{"no declared power is adaptive", 1.5, bareNexus, bare, adaptive[0], adaptive[1]},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := trainConfig(2, 0)
			cfg.GlobalBatch, cfg.Batch, cfg.EnergySlack = 64, hub.Energy, c.slack
			h := newHubCore(t, cfg, 1)
			for id, r := range map[string]wire.Register{"w0": c.w0, "w1": c.w1} {
				if err := h.Step(id, &r); err != nil {
					t.Fatal(err)
				}
			}
			got := welcomed(h.Ready())
			if got["w0"] != c.want0 || got["w1"] != c.want1 {
				t.Fatalf("batches %v, want w0 %d and w1 %d", got, c.want0, c.want1)
			}
		})
	}
}

// TestEnergySlackValidated: the knob must be at least 1 under the energy
// policy.
func TestEnergySlackValidated(t *testing.T) {
	cfg := hub.DefaultConfig()
	cfg.Batch, cfg.EnergySlack = hub.Energy, 0.9
	if err := cfg.Validate(); err == nil {
		t.Fatal("EnergySlack 0.9 accepted")
	}
	cfg.EnergySlack = 1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}
