package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestPowerLine: a power line overrides a profile's model field by field
// (the rest stays the built-in one), a profile the scenario defines
// without one gets the generic estimates, and bad fields are refused.
func TestPowerLine(t *testing.T) {
	sc, err := ParseScenario(strings.NewReader(`name t
profile slow step=4s
power nexus-6p cpu=3 tx-nj=50 tail=100ms source=lab
power slow battery-wh=5 unit=gpu gpu=1.5
device nexus-6p
device slow
`))
	if err != nil {
		t.Fatal(err)
	}
	n, def := sc.powerOf("nexus-6p"), builtinPowers["nexus-6p"]
	if n.CPU != 3 || math.Abs(n.Tx-50e-9) > 1e-15 || n.Tail != 100*time.Millisecond || n.Source != "lab" ||
		n.Idle != def.Idle || n.Rx != def.Rx || n.Battery != def.Battery {
		t.Errorf("nexus-6p overridden: %+v (built-in %+v)", n, def)
	}
	s := sc.powerOf("slow")
	if s.Battery != 5 || s.compute() != 1.5 || s.Idle != genericPower.Idle {
		t.Errorf("slow: %+v", s)
	}
	if sc.powerOf("meizu-mx3") != builtinPowers["meizu-mx3"] {
		t.Errorf("meizu-mx3 changed without a power line")
	}
	for _, bad := range []string{
		"power nexus-6p cpu=-1", "power nexus-6p unit=npu", "power nexus-6p battery-wh=0",
		"power nexus-6p watts=3", "power nexus-6p tail=soon", "power",
	} {
		if _, err := ParseScenario(strings.NewReader("name t\ndevice nexus-6p\n" + bad + "\n")); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestEnergyAccounting: every phone's energy is the sum of its parts, and
// each part is what the model says of the phone's times: compute at idle
// plus the unit's draw, waiting at idle, the radio's terms only when
// something crossed the air (never in a solo run); the battery share is
// of the profile's capacity, none on a charger; the energy of the run
// grows with its evaluations and reaches the target before the end.
func TestEnergyAccounting(t *testing.T) {
	rep := simulate(t, "paper-table1", Options{Iterations: 10}, func(sc *Scenario) {
		sc.Policies = []string{"solo", "adaptive", "energy"}
		sc.Devices[1].Charging = true // the Meizu
		sc.EvalEvery, sc.Target = 5, 0.1
	})
	for _, r := range rep.Runs {
		var sum float64
		for _, d := range r.Devices {
			e := d.Energy
			pw := builtinPowers[d.Profile]
			sum += e.Total()
			if !almost(e.Compute, (pw.Idle+pw.CPU)*d.Compute, 1e-9) {
				t.Errorf("%s %s: compute %.4f J for %.4f s, want %.4f", r.Name, d.Name, e.Compute, d.Compute, (pw.Idle+pw.CPU)*d.Compute)
			}
			if wait := pw.Idle * math.Max(0, d.Wall-d.Compute); !almost(e.Wait, wait, 1e-9) {
				t.Errorf("%s %s: waiting %.4f J, want %.4f", r.Name, d.Name, e.Wait, wait)
			}
			if (r.Policy == "solo") != (e.Radio == 0) {
				t.Errorf("%s %s: radio %.4f J", r.Name, d.Name, e.Radio)
			}
			if r.Policy != "solo" && e.Radio < pw.Tx*float64(d.BytesSent) {
				t.Errorf("%s %s: radio %.4f J, less than its %d bytes sent cost", r.Name, d.Name, e.Radio, d.BytesSent)
			}
			want := 100 * e.Total() / (pw.Battery * 3600)
			if d.Profile == "meizu-mx3" { // on its charger, alone too
				want = 0
			}
			if !almost(e.BatteryPercent(), want, 1e-9) {
				t.Errorf("%s %s: battery %.5f%%, want %.5f%%", r.Name, d.Name, e.BatteryPercent(), want)
			}
		}
		// The Meizu is on its charger: the batteries gave the Nexus's.
		if !almost(r.BatteryJoules(), r.Devices[0].Energy.Total(), 1e-9) && r.Devices[0].Profile == "nexus-6p" {
			t.Errorf("%s: %.3f J from batteries, the Nexus spent %.3f", r.Name, r.BatteryJoules(), r.Devices[0].Energy.Total())
		}
		if !almost(r.Energy, sum, 1e-9) || !(r.JoulesPerSample() > 0) {
			t.Errorf("%s: %.3f J, the phones' sum %.3f, %.4f J a sample", r.Name, r.Energy, sum, r.JoulesPerSample())
		}
		prev := 0.0
		for _, p := range r.Curve {
			if p.Joules < prev || p.Joules > r.Energy*(1+1e-9) {
				t.Errorf("%s: energy at iteration %d is %.3f J (before %.3f, run %.3f)", r.Name, p.Iteration, p.Joules, prev, r.Energy)
			}
			prev = p.Joules
		}
		if r.TimeToTarget < 0 || r.EnergyToTarget <= 0 || r.EnergyToTarget > r.Energy {
			t.Errorf("%s: target at %.2f s and %.2f J of %.2f", r.Name, r.TimeToTarget, r.EnergyToTarget, r.Energy)
		}
	}
	// The energy policy puts the Meizu, on its charger, to work first; the
	// adaptive one gives it its throughput's share.
	ad, en := rep.Run("adaptive"), rep.Run("energy")
	if en.Devices[1].Samples <= ad.Devices[1].Samples {
		t.Errorf("the Meizu on a charger did %d samples under energy, %d under adaptive", en.Devices[1].Samples, ad.Devices[1].Samples)
	}
}
