package hub_test

import (
	"testing"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/wire"
)

// deadlineHub returns a core with workers w0 and w1 registered (batches of
// 16, Fixed), MaxMisses off, and the given deadline rule.
func deadlineHub(t *testing.T, factor float64, floor, limit int) (*testCore, int) {
	t.Helper()
	cfg := trainConfig(2, 0)
	cfg.DeadlineTicks, cfg.DeadlineFactor, cfg.DeadlineFloorTicks, cfg.MaxMisses = limit, factor, floor, 0
	h := newHubCore(t, cfg, 1)
	for _, id := range []string{"w0", "w1"} {
		if err := h.Step(id, &wire.Register{Device: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	h.Advance()
	return h, h.Trainer().Net.NumParams()
}

// ticks calls Tick k times, failing on a deadline among them.
func ticks(t *testing.T, h *testCore, k int) {
	t.Helper()
	for i := range k {
		h.Tick()
		for _, e := range h.Ready().Events {
			if e.Kind == hub.EventLate || e.Kind == hub.EventRetry {
				t.Fatalf("%s of %s at tick %d of %d", e.Kind, e.Peer, i+1, k)
			}
		}
		h.Advance()
	}
}

// untilLate ticks until peer is marked late and returns how many ticks
// that took (0 if not within limit).
func untilLate(t *testing.T, h *testCore, peer string, limit int) int {
	t.Helper()
	for i := 1; i <= limit; i++ {
		h.Tick()
		for _, e := range h.Ready().Events {
			if e.Kind == hub.EventLate && e.Peer == peer {
				h.Advance()
				return i
			}
		}
		h.Advance()
	}
	return 0
}

func pushNow(t *testing.T, h *testCore, id string, batch, n int) {
	t.Helper()
	if err := h.Step(id, push(h.Iteration(), batch, n, 0.01)); err != nil {
		t.Fatal(err)
	}
	h.Advance()
}

// The measured deadline: both workers take 5 ticks (they push during the
// fifth) in iteration 0, then w1 falls silent in iteration 1. It is marked
// late after DeadlineFactor times 5 ticks, within the floor and the upper
// bound DeadlineTicks; with the fixed rule (factor 0) after DeadlineTicks.
// The first iteration, measured by nothing, always waits DeadlineTicks.
func TestMeasuredDeadline(t *testing.T) {
	for _, c := range []struct {
		name               string
		factor             float64
		floor, limit, took int
		want               int
	}{
		{"measured", 3, 2, 100, 5, 15},
		{"fixed rule", 0, 2, 100, 5, 100},
		{"fractional factor rounds up", 1.5, 0, 100, 5, 8},
		{"floor", 3, 10, 100, 1, 10},
		{"upper bound", 3, 2, 12, 5, 12},
		{"floor above the upper bound", 3, 20, 12, 1, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, n := deadlineHub(t, c.factor, c.floor, c.limit)
			// Iteration 0: nothing measured yet, so the deadline is the
			// upper bound: 99 silent ticks pass without a late worker.
			if c.limit == 100 {
				ticks(t, h, 99)
				h2, _ := deadlineHub(t, c.factor, c.floor, c.limit)
				if got := untilLate(t, h2, "w0", 200); got != 100 {
					t.Fatalf("unmeasured iteration: late after %d ticks, want 100", got)
				}
				h, n = deadlineHub(t, c.factor, c.floor, c.limit)
			}
			ticks(t, h, c.took-1)
			pushNow(t, h, "w0", 16, n)
			pushNow(t, h, "w1", 16, n)
			if h.Iteration() != 1 {
				t.Fatalf("iteration %d, want 1", h.Iteration())
			}
			pushNow(t, h, "w0", 16, n)
			if got := untilLate(t, h, "w1", 200); got != c.want {
				t.Errorf("w1 late after %d ticks, want %d", got, c.want)
			}
		})
	}
}

// A worker that missed deadlines gets twice the time per miss (a throttled
// phone catches up and is measured again; a silent one is given up on
// quickly), and a member whose batch grew gets its time scaled up.
func TestMeasuredDeadlineBacksOffAndScales(t *testing.T) {
	h, n := deadlineHub(t, 3, 2, 200)
	ticks(t, h, 4)
	pushNow(t, h, "w0", 16, n) // both measured: 5 ticks for 16 samples
	pushNow(t, h, "w1", 16, n)
	ticks(t, h, 4)
	pushNow(t, h, "w0", 16, n) // iteration 1: w0 takes 5 ticks again, w1 is silent
	if got := untilLate(t, h, "w1", 300); got != 11 {
		t.Fatalf("iteration 1: w1 late after %d more ticks, want 11 (15 in all)", got)
	}
	// Iteration 2: w0 alone with the whole batch of 32: 5 ticks scaled
	// to 10, times 3. It pushes at once; the deadline shows when it does not.
	if h.Iteration() != 2 {
		t.Fatalf("iteration %d, want 2", h.Iteration())
	}
	if got := untilLate(t, h, "w0", 300); got != 30 {
		t.Fatalf("iteration 2, w0 alone with twice its batch: late after %d ticks, want 30", got)
	}
	// The iteration reopened for both, each having missed once: 5 ticks
	// (w0's with 32 samples, not scaled down to its 16 now), doubled, times
	// 3; without the back-off it would be 15.
	pushNow(t, h, "w0", 16, n)
	if got := untilLate(t, h, "w1", 300); got != 30 {
		t.Fatalf("after one miss each: w1 late after %d ticks, want 30", got)
	}
	// Iteration 3 is w0's alone (w1 applies the state it was sent); w0
	// pushes at once. In iteration 4 w1, which has missed twice, is late
	// after 5·4·3 = 60 ticks.
	if h.Iteration() != 3 {
		t.Fatalf("iteration %d, want 3", h.Iteration())
	}
	pushNow(t, h, "w0", 16, n)
	pushNow(t, h, "w0", 16, n)
	if got := untilLate(t, h, "w1", 300); got != 60 {
		t.Fatalf("after two misses: w1 late after %d ticks, want 60", got)
	}
}

func TestDeadlineConfigRefused(t *testing.T) {
	for _, bad := range []func(*hub.Config){
		func(c *hub.Config) { c.DeadlineFactor = 0.5 },
		func(c *hub.Config) { c.DeadlineFactor = -1 },
		func(c *hub.Config) { c.DeadlineFloorTicks = -1 },
	} {
		cfg := hub.DefaultConfig()
		bad(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
