package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/worker"
)

// fakeSupply makes a power_supply folder as Linux and Android expose it:
// a battery BAT0 at pct percent with status, and a charger AC offline. It
// returns the folder and a function that rewrites the battery's status.
func fakeSupply(t *testing.T, pct, status string) (dir string, set func(status string)) {
	t.Helper()
	dir = t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("BAT0/type", "Battery")
	write("BAT0/capacity", pct)
	write("BAT0/status", status)
	write("AC/type", "Mains")
	write("AC/online", "0")
	return dir, func(s string) { write("BAT0/status", s) }
}

// oneThread returns a CPU backend whose kernels run on the caller's
// goroutine alone: the first parallel kernel of a process starts helper
// goroutines that a synctest bubble would wait for (gpu/internal/sgemm).
func oneThread() *cpu.CPU {
	b := cpu.NewCPU()
	b.SetThreads(1)
	return b
}

// TestBatteryFloorParksAndResumes runs a hub with --battery-floor 20
// (Config.BatteryFloor, what the flag sets) and two workers through the
// real drivers over the in-memory transport: w1's fake power supply says
// 15% and discharging, so the hub parks it from the first iteration (no
// batch, it only applies the merged updates); when the supply switches to
// charging, w1's driver reads it, sends a Status, and w1 gets batches
// again. At the end both workers hold the hub's weights, bit for bit.
// Virtual time (synctest): the hub waits two battery periods once, so that
// the worker's reading happens while the run is at a known point.
func TestBatteryFloorParksAndResumes(t *testing.T) {
	synctest.Test(t, testBatteryFloorParksAndResumes)
}

func testBatteryFloorParksAndResumes(t *testing.T) {
	const every = time.Second
	dir, setStatus := fakeSupply(t, "15", "Discharging")
	cfg := trainConfig(2, 12)
	cfg.BatteryFloor = 20

	var mu sync.Mutex
	var events []hub.Event
	merges, switched := 0, false
	d := &hub.Driver{Tick: 10 * time.Millisecond, DrainTimeout: 100 * time.Millisecond}
	d.OnReady = func(rd hub.Ready) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, rd.Events...)
		for _, e := range rd.Events {
			if e.Kind == hub.EventMerged {
				merges++
			}
		}
		if merges >= 3 && !switched {
			// Three iterations without w1: plug it in, and give its
			// driver two battery periods to notice.
			switched = true
			setStatus("Charging")
			time.Sleep(2 * every)
		}
	}
	mn, err := transport.NewMemNetwork(transport.DefaultMemConfig())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := mn.Listen("hub")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tc := newHubCoreOn(t, cfg, 1, oneThread())
	d.Core, d.Trainer, d.Listener = tc.Core, tc.Trainer(), ln
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	hubDone := make(chan error, 1)
	go func() { hubDone <- d.Run(ctx) }()

	ds := synthetic(t, 256)
	sessions := make([]*worker.Session, 2)
	errs := make(chan error, 2)
	for i, name := range []string{"w0", "w1"} {
		shard, err := data.Shard(ds, i, 2)
		if err != nil {
			t.Fatal(err)
		}
		wc := worker.DefaultConfig()
		wc.Name = name
		s := &worker.Session{Config: wc, Backend: oneThread(), Data: data.NewLoader(shard, 1, uint64(100+i), true),
			Dial: func(ctx context.Context) (transport.Conn, error) { return mn.Dialer(name).Dial(ctx, "hub") }}
		if name == "w1" {
			s.Battery, s.BatteryEvery = worker.PowerSupply{Dir: dir}.Read, every
		}
		sessions[i] = s
		go func() { errs <- s.Run(ctx) }()
	}
	for range sessions {
		if err := <-errs; err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	if err := <-hubDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("hub: %v", err)
	}

	// What the hub decided, in order.
	mu.Lock()
	defer mu.Unlock()
	var parked, resumed, charging = -1, -1, -1
	var before, after []int // workers merged, before w1's resume and after
	for i, e := range events {
		switch {
		case e.Kind == hub.EventWorkerParked && e.Peer == "w1" && parked < 0:
			parked = i
			if !strings.Contains(e.Text, "15% discharging") {
				t.Errorf("parked with %q, want the battery in the text", e.Text)
			}
		case e.Kind == hub.EventBattery && e.Peer == "w1" && e.Battery.Status == wire.BatteryCharging:
			charging = i
		case e.Kind == hub.EventWorkerResumed && e.Peer == "w1":
			resumed = i
		case e.Kind == hub.EventMerged && resumed < 0:
			before = append(before, e.Workers)
		case e.Kind == hub.EventMerged:
			after = append(after, e.Workers)
		case e.Kind == hub.EventWorkerParked && e.Peer == "w0":
			t.Errorf("w0, with no battery reported, was parked: %s", e.Text)
		}
	}
	if parked < 0 || charging < parked || resumed < charging {
		t.Fatalf("events: parked at %d, charging reported at %d, resumed at %d: want them in that order", parked, charging, resumed)
	}
	for _, w := range before {
		if w != 1 {
			t.Errorf("before w1 resumed an iteration merged %d workers' pushes, want w0's alone (%v)", w, before)
			break
		}
	}
	if len(before) < 3 || len(after) == 0 || after[len(after)-1] != 2 {
		t.Errorf("merges of 1 worker %v, then %v: want at least 3 without w1, and w1 in the last", before, after)
	}
	// The weights: every worker applied every merged update.
	want := state.NetHash(d.Trainer.Net)
	if it := d.Core.Iteration(); it != cfg.Iterations {
		t.Fatalf("the hub ended at iteration %d, want %d", it, cfg.Iterations)
	}
	for i, s := range sessions {
		c := s.Core()
		if c.Iteration() != cfg.Iterations || state.NetHash(c.Trainer().Net) != want {
			t.Errorf("w%d at iteration %d: its weights differ from the hub's", i, c.Iteration())
		}
	}
}

// TestBatteryFloorEveryWorkerLow: when the floor parks every live worker
// the run waits (EventParked, nothing sent), whatever the policy; a Status
// that says charging opens the iteration with that worker in it, and a
// worker reporting no battery is never parked for it.
func TestBatteryFloorEveryWorkerLow(t *testing.T) {
	low := wire.Battery{Percent: 10, Status: wire.BatteryDischarging}
	for _, pol := range []hub.BatchPolicy{hub.Fixed, hub.Adaptive} {
		t.Run(pol.String(), func(t *testing.T) {
			cfg := trainConfig(1, 0)
			cfg.Batch, cfg.BatteryFloor = pol, 20
			h := newHubCore(t, cfg, 1)
			if err := h.Step("w0", &wire.Register{Device: "phone", Battery: low}); err != nil {
				t.Fatal(err)
			}
			rd := h.Ready()
			h.Advance()
			if len(rd.Messages) != 0 || !hasEvent(rd.Events, hub.EventParked, "") || !hasEvent(rd.Events, hub.EventWorkerParked, "w0") {
				t.Fatalf("a lone worker at 10%% discharging: sent %d messages, events %v; want none sent, w0 parked and the run waiting", len(rd.Messages), rd.Events)
			}
			// A worker at 50% and discharging: above the floor, so it runs.
			if err := h.Step("w1", &wire.Register{Device: "phone", Battery: wire.Battery{Percent: 50, Status: wire.BatteryDischarging}}); err != nil {
				t.Fatal(err)
			}
			rd = h.Ready()
			h.Advance()
			if got := welcomed(rd); len(got) != 2 || got["w0"] != 0 || got["w1"] != cfg.GlobalBatch {
				t.Fatalf("after w1 joined: welcomes %v, want w0 with no batch and w1 with all %d", got, cfg.GlobalBatch)
			}
			// w0 on a charger: it gets a share at the next open.
			if err := h.Step("w0", &wire.Status{Battery: wire.Battery{Percent: 10, Status: wire.BatteryCharging}}); err != nil {
				t.Fatal(err)
			}
			rd = h.Ready()
			h.Advance()
			if !hasEvent(rd.Events, hub.EventBattery, "w0") || len(rd.Messages) != 0 {
				t.Fatalf("a Status in an open iteration: events %v, %d messages; want the battery noted and nothing sent", rd.Events, len(rd.Messages))
			}
			if err := h.Step("w1", push(0, cfg.GlobalBatch, h.Trainer().Net.NumParams(), 1)); err != nil {
				t.Fatal(err)
			}
			rd = h.Ready()
			h.Advance()
			var sizes wire.BatchSizes
			for _, env := range rd.Messages {
				if m, ok := env.Msg.(*wire.Merged); ok && !m.Partial {
					sizes = m.BatchSizes
				}
			}
			if !hasEvent(rd.Events, hub.EventWorkerResumed, "w0") || sizes["w0"] < 1 || sizes["w1"] < 1 {
				t.Fatalf("next iteration: events %v, batches %v; want w0 resumed with a share", rd.Events, sizes)
			}
		})
	}
	// The unknown: no battery, or one the hub cannot trust, never parks.
	for _, b := range []wire.Battery{{}, {Percent: 5}, {Percent: 5, Status: 200}, {Percent: -3, Status: wire.BatteryDischarging}} {
		cfg := trainConfig(1, 0)
		cfg.BatteryFloor = 20
		h := newHubCore(t, cfg, 1)
		if err := h.Step("w0", &wire.Register{Battery: b}); err != nil {
			t.Fatal(err)
		}
		if got := welcomed(h.Ready()); got["w0"] != cfg.GlobalBatch {
			t.Errorf("battery %+v: welcomes %v, want w0 with the whole batch", b, got)
		}
	}
}

func hasEvent(es []hub.Event, k hub.EventKind, peer string) bool {
	for _, e := range es {
		if e.Kind == k && e.Peer == peer {
			return true
		}
	}
	return false
}

// welcomed returns the batch of every Welcome in rd, by worker.
func welcomed(rd hub.Ready) map[string]int {
	out := map[string]int{}
	for _, env := range rd.Messages {
		if w, ok := env.Msg.(*wire.Welcome); ok {
			out[env.To] = w.BatchSize
		}
	}
	return out
}
