package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

func TestBackoffWait(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	r := rand.New(rand.NewPCG(1, 2))
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for k, w := range want {
		if got := b.Wait(k, r); got != w*time.Millisecond {
			t.Errorf("no jitter: wait %d = %v, want %v", k, got, w*time.Millisecond)
		}
	}
	if got := b.Wait(1000, r); got != b.Max {
		t.Errorf("wait 1000 = %v, want the cap %v", got, b.Max)
	}
	b.Jitter = 0.5
	seen := map[time.Duration]bool{}
	for k := range 200 {
		w := want[min(k%8, 7)] * time.Millisecond
		got := b.Wait(k%8, r)
		if got < w/2 || got > w {
			t.Fatalf("jitter 0.5: wait %d = %v, want in [%v, %v]", k%8, got, w/2, w)
		}
		seen[got] = true
	}
	if len(seen) < 50 {
		t.Errorf("jitter drew only %d distinct waits in 200", len(seen))
	}
	for _, bad := range []Backoff{{}, {Min: 2, Max: 1}, {Min: 1, Max: 2, Jitter: 1.5}} {
		if err := bad.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Validate %v, want ErrConfig", bad, err)
		}
	}
}

// randBatches is a data source of random lenet5 inputs.
type randBatches struct {
	r     *rand.Rand
	batch int
}

func (b *randBatches) SetBatch(n int) { b.batch = n }
func (b *randBatches) Next(x []float32, labels []int32) (int, bool) {
	for i := range x[:b.batch*28*28] {
		x[i] = float32(b.r.NormFloat64())
	}
	for i := range labels[:b.batch] {
		labels[i] = int32(b.r.IntN(10))
	}
	return b.batch, false
}

// sessionRig is a scripted hub on an in-memory network and a Session
// dialling it.
type sessionRig struct {
	t     *testing.T
	mn    *transport.MemNetwork
	s     *Session
	dials atomic.Int32
	done  chan error
}

func newSessionRig(t *testing.T, reconnect time.Duration) *sessionRig {
	mn, err := transport.NewMemNetwork(transport.DefaultMemConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := &sessionRig{t: t, mn: mn, done: make(chan error, 1)}
	r.s = &Session{
		Config:  DefaultConfig(),
		Backend: serialCPU(),
		Data:    &randBatches{r: rand.New(rand.NewPCG(1, 1))},
		Dial: func(ctx context.Context) (transport.Conn, error) {
			r.dials.Add(1)
			return mn.Dialer("w").Dial(ctx, "hub")
		},
		Backoff:          Backoff{Min: 10 * time.Millisecond, Max: 40 * time.Millisecond, Jitter: 0.5},
		ReconnectTimeout: reconnect,
		Rand:             rand.New(rand.NewPCG(7, 7)),
	}
	return r
}

func (r *sessionRig) run(ctx context.Context) { go func() { r.done <- r.s.Run(ctx) }() }

func (r *sessionRig) accept(ln transport.Listener) transport.Conn {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ln.Accept(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// recv returns the next message the hub's end c receives, failing t if it
// is not of kind want or none comes within 30 s: a bound for a hung test,
// not a measurement (a pass slowed tenfold under the race detector on a
// loaded machine has taken over 5 s).
func recv(t *testing.T, c transport.Conn, want wire.Kind) wire.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := c.Recv(ctx)
	if err != nil || m.Kind() != want {
		t.Fatalf("hub received %v (%v), want %s", m, err, want)
	}
	return m
}

func (r *sessionRig) wait(limit time.Duration) error {
	r.t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(limit):
		r.t.Fatalf("the session did not end within %v", limit)
		return nil
	}
}

// TestSessionReconnects: the hub's connection drops mid-run; the worker
// dials again with backoff, registers afresh and finishes with the new
// connection's Goodbye. It runs in a synctest bubble, as the session tests
// below do: the backoff's waits, the hub's absence and the timeouts are
// virtual time, which passes only when every goroutine waits, so a loaded
// machine cannot stretch or squeeze them and the dials are counted exactly.
func TestSessionReconnects(t *testing.T) { synctest.Test(t, testSessionReconnects) }

func testSessionReconnects(t *testing.T) {
	r := newSessionRig(t, 5*time.Second)
	var connects []int
	r.s.OnConnect = func(n int) { connects = append(connects, n) }
	f := newFakeHub(t)
	ln, err := r.mn.Listen("hub")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.run(ctx)
	c1 := r.accept(ln)
	recv(t, c1, wire.KindRegister)
	if err := c1.Send(ctx, f.welcome(2)); err != nil {
		t.Fatal(err)
	}
	recv(t, c1, wire.KindPush)
	// The hub goes away: nothing listens for half a second, in which the
	// worker's dials (backoff 10 ms doubling to 40 ms, less jitter) are
	// refused.
	c1.Close()
	ln.Close()
	time.Sleep(500 * time.Millisecond)
	if ln, err = r.mn.Listen("hub"); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c2 := r.accept(ln)
	defer c2.Close()
	recv(t, c2, wire.KindRegister)
	f.merged(0.01, 0) // the hub moved on while the worker was away
	if err := c2.Send(ctx, f.welcome(0)); err != nil {
		t.Fatal(err)
	}
	st := f.welcome(0).ModelState
	if err := c2.Send(ctx, &wire.Goodbye{Reason: "done", FinalWeights: st.Weights, FinalState: st.State}); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(5 * time.Second); err != nil {
		t.Fatalf("Run: %v, want nil after the Goodbye", err)
	}
	if w, _ := r.s.Core().Final(); len(w) != f.n || r.s.Core().Iteration() != 1 {
		t.Fatalf("final weights of %d values at iteration %d, want %d at 1", len(w), r.s.Core().Iteration(), f.n)
	}
	// 1 dial, then in 500 ms waits of 5–10, 10–20, then 20–40 ms.
	if len(connects) != 2 || r.dials.Load() < 14 {
		t.Fatalf("connections %v after %d dials, want [0 1] after at least 14 (the others refused)", connects, r.dials.Load())
	}
}

// TestSessionGivesUp: with the hub gone for good, Run ends with ErrHubGone
// once ReconnectTimeout passes, having retried; the first dial is never
// retried.
func TestSessionGivesUp(t *testing.T) { synctest.Test(t, testSessionGivesUp) }

func testSessionGivesUp(t *testing.T) {
	r := newSessionRig(t, time.Second)
	ln, err := r.mn.Listen("hub")
	if err != nil {
		t.Fatal(err)
	}
	r.run(context.Background())
	c := r.accept(ln)
	recv(t, c, wire.KindRegister)
	c.Close()
	ln.Close()
	start := time.Now()
	err = r.wait(5 * time.Second)
	if !errors.Is(err, ErrHubGone) || !errors.Is(err, transport.ErrRefused) {
		t.Fatalf("Run: %v, want ErrHubGone wrapping the last dial's refusal", err)
	}
	// Virtual time: Run ends at the timeout exactly, after the first dial
	// and the redials its waits of at most 40 ms leave room for.
	if took := time.Since(start); took != time.Second || r.dials.Load() < 25 {
		t.Fatalf("gave up after %v and %d dials, want 1s and at least 25", took, r.dials.Load())
	}

	first := newSessionRig(t, time.Minute)
	first.run(context.Background())
	if err := first.wait(time.Second); !errors.Is(err, transport.ErrRefused) || first.dials.Load() != 1 {
		t.Fatalf("first dial to nothing: %v after %d dials, want one refused dial", err, first.dials.Load())
	}
}

// TestSessionLeavesCleanly: when ctx ends (SIGINT), the worker tells the
// hub Goodbye before it closes, even in the middle of a compute: ctx ends
// as the pass draws its batch, so the forward and backward passes are
// still to run.
func TestSessionLeavesCleanly(t *testing.T) { synctest.Test(t, testSessionLeavesCleanly) }

// cancelOnNext is a data source that calls cancel when the pass draws its
// first batch.
type cancelOnNext struct {
	*randBatches
	cancel context.CancelFunc
}

func (c cancelOnNext) Next(x []float32, labels []int32) (int, bool) {
	c.cancel()
	return c.randBatches.Next(x, labels)
}

func testSessionLeavesCleanly(t *testing.T) {
	r := newSessionRig(t, time.Minute)
	f := newFakeHub(t)
	ln, err := r.mn.Listen("hub")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r.s.Data = cancelOnNext{r.s.Data.(*randBatches), cancel}
	r.run(ctx)
	c := r.accept(ln)
	defer c.Close()
	recv(t, c, wire.KindRegister)
	if err := c.Send(context.Background(), f.welcome(64)); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	for {
		m, err := c.Recv(rctx)
		if err != nil {
			t.Fatalf("no Goodbye before the end: %v", err)
		}
		if g, ok := m.(*wire.Goodbye); ok {
			if g.Reason != "the worker was stopped" {
				t.Fatalf("Goodbye reason %q", g.Reason)
			}
			break
		}
		if m.Kind() != wire.KindPush {
			t.Fatalf("hub received %s", m.Kind())
		}
	}
	if err := r.wait(5 * time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
}
