package hub_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	stdnet "net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/watch"
)

// fakeWorker speaks the wire protocol by hand over a pipe to the driver.
type fakeWorker struct {
	w   *wire.Writer
	in  chan wire.Message
	mu  sync.Mutex
	err error
}

func dialFake(t *testing.T, ln *pipeListener, id string) *fakeWorker {
	t.Helper()
	hubEnd, peer := stdnet.Pipe()
	ln.conns <- transport.NewStreamConn(hubEnd, id, 1<<20)
	f := &fakeWorker{w: wire.NewWriter(peer), in: make(chan wire.Message, 64)}
	go func() {
		r := wire.NewReader(peer, 1<<20)
		for {
			m, err := r.ReadMessage(nil)
			if err != nil {
				close(f.in)
				return
			}
			f.in <- m
		}
	}()
	t.Cleanup(func() { peer.Close() })
	return f
}

func (f *fakeWorker) send(t *testing.T, m wire.Message) {
	t.Helper()
	if err := f.w.WriteMessage(m); err != nil {
		t.Fatal(err)
	}
}

// next returns the next message of type T, skipping others.
func next[T wire.Message](t *testing.T, f *fakeWorker) T {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-f.in:
			if !ok {
				t.Fatal("the hub closed the connection")
			}
			if v, ok := m.(T); ok {
				return v
			}
		case <-timeout:
			var zero T
			t.Fatalf("no %T from the hub", zero)
		}
	}
}

// TestDriverPublishesWhatTheCoreDecided: with Driver.Watch set, the driver
// publishes each join with the worker's name and backend and full peer id,
// the start, each closed iteration with every member's batch, next share,
// compute time (as pushed), communication and waiting times and bytes, and
// each late mark with the worker's name; a Recorder fed by the bus ends
// with the same picture.
//
// It runs in a synctest bubble: the fake workers' compute (sleeps), the
// ticks and so the deadline are virtual time, which passes only when every
// goroutine waits, so the times the driver measures are exact and a loaded
// machine cannot stretch them. The driver's log handler takes a virtual
// millisecond per record, as a slow log sink would: an iteration still
// opens when its Merged leaves, so compute, communication and waiting add
// up to the iteration exactly.
func TestDriverPublishesWhatTheCoreDecided(t *testing.T) {
	synctest.Test(t, testDriverPublishes)
}

// slowHandler takes a millisecond to write each record.
type slowHandler struct{ slog.Handler }

func (h slowHandler) Handle(ctx context.Context, r slog.Record) error {
	time.Sleep(time.Millisecond)
	return h.Handler.Handle(ctx, r)
}

func testDriverPublishes(t *testing.T) {
	cfg := trainConfig(2, 0)
	cfg.Tick, cfg.DeadlineTicks, cfg.MaxMisses = 10*time.Millisecond, 20, 0
	cfg.DeadlineFactor = 0 // the fixed 200 ms deadline, which the waits below are checked against
	core := newHubCore(t, cfg, 1)
	n := core.Trainer().Net.NumParams()
	bus := &watch.Bus{}
	var mu sync.Mutex
	var events []watch.Event
	bus.Attach(1024, func(e watch.Event) { mu.Lock(); events = append(events, e); mu.Unlock() })
	rec := watch.NewRecorder("hub", bus)
	rec.Handle(watch.Event{Kind: "listening", Time: time.Now(), Data: &watch.Session{Role: "hub", Batch: 32}})

	ln := &pipeListener{conns: make(chan transport.Conn, 2), done: make(chan struct{})}
	log := slog.New(slowHandler{slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})})
	d := &hub.Driver{Core: core.Core, Trainer: core.Trainer(), Listener: ln, Tick: cfg.Tick, Watch: bus, DrainTimeout: 100 * time.Millisecond, Log: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; ln.Close() }()

	const idA, idB = "12D3KooWworkerA", "12D3KooWworkerB"
	a, b := dialFake(t, ln, idA), dialFake(t, ln, idB)
	a.send(t, &wire.Register{Device: "pixel-7", Backend: "opencl", Speed: 100})
	// The second registration waits for the first to be handled, so that
	// the join order is fixed.
	for len(rec.Status().Workers) == 0 {
		time.Sleep(time.Millisecond)
	}
	b.send(t, &wire.Register{Device: "galaxy", Backend: "cpu", Speed: 100})
	wa, wb := next[*wire.Welcome](t, a), next[*wire.Welcome](t, b)
	// A push goes out after the compute it reports, as a real worker's
	// does: the hub counts the compute inside the cycle.
	push := func(f *fakeWorker, it uint64, samples int, compute time.Duration) {
		time.Sleep(compute)
		f.send(t, &wire.Push{Header: wire.Header{Iteration: it}, Samples: samples, ComputeNanos: compute.Nanoseconds(),
			Loss: 1.5, Gradient: make(wire.Floats, n)})
	}
	// Iteration 0: both push; A reports 7 ms of compute, B 3 ms.
	push(a, 0, wa.BatchSize, 7*time.Millisecond)
	push(b, 0, wb.BatchSize, 3*time.Millisecond)
	m := next[*wire.Merged](t, a)
	next[*wire.Merged](t, b)
	// Iteration 1: only A pushes; B misses the 200 ms deadline.
	push(a, 1, m.BatchSizes[idA], 7*time.Millisecond)
	next[*wire.Merged](t, a)

	deadline := time.Now().Add(10 * time.Second)
	for rec.Status().Iteration < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	bus.Close()

	byKind := map[string][]watch.Event{}
	for _, e := range events {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	joined := byKind[watch.KindJoined]
	if len(joined) != 2 {
		t.Fatalf("joined events %+v", joined)
	}
	for i, want := range []watch.Peer{{ID: idA, Name: "pixel-7", Backend: "opencl"}, {ID: idB, Name: "galaxy", Backend: "cpu"}} {
		if p := joined[i].Data.(*watch.Peer); p.ID != want.ID || p.Name != want.Name || p.Backend != want.Backend || joined[i].Time.IsZero() {
			t.Errorf("joined %d: %+v, want %+v", i, p, want)
		}
	}
	if len(byKind[watch.KindStarted]) != 1 {
		t.Errorf("started events %+v", byKind[watch.KindStarted])
	}
	late := byKind[watch.KindLate]
	if len(late) != 1 || late[0].Data.(*watch.Peer).ID != idB || late[0].Data.(*watch.Peer).Name != "galaxy" || late[0].Data.(*watch.Peer).Iteration != 1 {
		t.Fatalf("late events %+v", late)
	}
	prog := byKind[watch.KindProgress]
	if len(prog) < 2 {
		t.Fatalf("%d progress events", len(prog))
	}
	// addsUp: a pusher's compute, communication and waiting add up to
	// the iteration (each is rounded down to a microsecond).
	addsUp := func(it int, tk watch.Tick, seconds float64) {
		if sum := tk.ComputeMS + tk.CommMS + tk.WaitMS; math.Abs(sum-1e3*seconds) > 0.005 {
			t.Errorf("iteration %d: %s: %.3f+%.3f+%.3f = %.3f ms of %.3f", it, tk.Name, tk.ComputeMS, tk.CommMS, tk.WaitMS, sum, 1e3*seconds)
		}
	}
	p0 := prog[0].Data.(*watch.Progress)
	if p0.Iteration != 1 || p0.Samples != 32 || p0.Loss != 1.5 || len(p0.Workers) != 2 || p0.BytesUp != int64(8*n) {
		t.Fatalf("first progress %+v", p0)
	}
	for _, tk := range p0.Workers {
		wantCompute, wantName := 7.0, "pixel-7"
		if tk.ID == idB {
			wantCompute, wantName = 3.0, "galaxy"
		}
		if tk.Name != wantName || tk.ComputeMS != wantCompute || tk.Batch != 16 || tk.Next != 16 || tk.BytesUp != int64(4*n) ||
			tk.BytesDown != int64(4*n) || tk.CommMS < 0 || tk.WaitMS < 0 {
			t.Errorf("tick %+v", tk)
		}
		addsUp(0, tk, p0.Seconds)
	}
	// Iteration 1 merged A alone, at B's deadline (20 ticks of 10 ms after
	// it opened, give or take the tick's phase): B's row has no push, and
	// the wait of A covers the deadline.
	p1 := prog[1].Data.(*watch.Progress)
	if p1.Iteration != 2 || p1.Samples != 16 || p1.Seconds < 0.19 || p1.Seconds > 0.21 {
		t.Errorf("second progress %+v", p1)
	}
	for _, tk := range p1.Workers {
		if tk.ID == idA {
			addsUp(1, tk, p1.Seconds)
			if tk.ComputeMS != 7 || tk.WaitMS < 150 {
				t.Errorf("A computed %.1f ms and waited %.1f ms for a 200 ms deadline", tk.ComputeMS, tk.WaitMS)
			}
		} else if tk.ComputeMS != 0 || tk.WaitMS != 0 || tk.Next != 16 {
			t.Errorf("B, late, has a push: %+v", tk)
		}
	}
	st := rec.Status()
	if len(st.Workers) != 2 || st.Workers[0].Name != "pixel-7" || st.Workers[1].State != "late" || st.Workers[1].Late != 1 {
		t.Errorf("recorded workers %+v", st.Workers)
	}
}
