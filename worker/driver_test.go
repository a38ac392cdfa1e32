package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

// layerParts returns the offsets of the fake hub's model's layers with
// parameters: the session's parts with layer-wise overlap (hub.PartBounds).
func (f *fakeHub) layerParts() []int {
	var out []int
	off := 0
	for _, l := range f.tr.Net.Layers() {
		if l.Params > 0 {
			out = append(out, off)
			off += l.Params
		}
	}
	return out
}

// driverRig is a Driver on an in-memory connection to a scripted hub.
type driverRig struct {
	t      *testing.T
	f      *fakeHub
	d      *Driver
	hub    transport.Conn // the hub's end
	done   chan error
	passes chan PassTiming
}

// gatedConn holds each Push's Send until gate lets it through (when set).
type gatedConn struct {
	transport.Conn
	gate chan struct{}
}

func (c *gatedConn) Send(ctx context.Context, m wire.Message) error {
	if _, ok := m.(*wire.Push); ok && c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.Conn.Send(ctx, m)
}

// The worker's backend is serialCPU for the test that runs in a synctest
// bubble, cpu.NewCPU (every core) for those on the wall clock, whose
// passes, stretched by slowdown, must end well within recv's timeout also
// under the race detector.
func newDriverRig(t *testing.T, b gpu.Backend, slowdown float64, gate chan struct{}) *driverRig {
	t.Helper()
	mn, err := transport.NewMemNetwork(transport.DefaultMemConfig())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := mn.Listen("hub")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wc, err := mn.Dialer("w").Dial(ctx, "hub")
	if err != nil {
		t.Fatal(err)
	}
	hc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hc.Close() })
	core, err := NewCore(DefaultConfig(), b)
	if err != nil {
		t.Fatal(err)
	}
	r := &driverRig{t: t, f: newFakeHub(t), hub: hc, done: make(chan error, 1), passes: make(chan PassTiming, 16)}
	r.d = &Driver{Core: core, Conn: &gatedConn{Conn: wc, gate: gate}, Data: &randBatches{r: rand.New(rand.NewPCG(1, 1))},
		Slowdown: slowdown, OnPass: func(p PassTiming) { r.passes <- p }}
	return r
}

// start runs the driver with ctx and welcomes it into an overlap session
// (one part per layer) with a batch of 64.
func (r *driverRig) start(ctx context.Context) {
	r.t.Helper()
	go func() { r.done <- r.d.Run(ctx) }()
	recv(r.t, r.hub, wire.KindRegister)
	w := r.f.welcome(64)
	w.Session.Parts = r.f.layerParts()
	if err := r.hub.Send(context.Background(), w); err != nil {
		r.t.Fatal(err)
	}
}

// wait returns Run's error, failing the test if Run has not returned
// within a minute (a bound for a hung test, as recv's: Run returns only
// once the pass is over, which Slowdown and the race detector stretch).
func (r *driverRig) wait() error {
	r.t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(time.Minute):
		r.t.Fatal("Run did not return")
		return nil
	}
}

// TestDriverOverlap: with layer-wise overlap the driver pushes each part
// as the backward pass finishes it, last layer first: the first Push
// reaches the hub while the pass is still running, and what the parts
// carry is, bit for bit, the gradient Trainer.Gradient computes.
func TestDriverOverlap(t *testing.T) {
	// Playing a device 10× slower stretches the pass (lenet5, 64 samples)
	// to tens of milliseconds, so the layers below the last take long
	// after its part is out.
	r := newDriverRig(t, cpu.NewCPU(), 10, nil)
	r.start(context.Background())
	parts := r.f.layerParts()
	type arrival struct {
		p  *wire.Push
		at time.Time
	}
	var got []arrival
	for range parts {
		m := recv(t, r.hub, wire.KindPush)
		got = append(got, arrival{m.(*wire.Push), time.Now()})
	}
	var pt PassTiming
	select {
	case pt = <-r.passes:
	case <-time.After(time.Minute):
		t.Fatal("no pass timing")
	}
	if err := r.hub.Send(context.Background(), &wire.Goodbye{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	passEnd := pt.Start.Add(pt.Pass)
	if !got[0].at.Before(passEnd) {
		t.Errorf("the first Push reached the hub %v after the pass ended, want before", got[0].at.Sub(passEnd))
	}
	t.Logf("pass %v; pushes reached the hub at %v", pt.Pass, func() (ds []time.Duration) {
		for _, a := range got {
			ds = append(ds, a.at.Sub(pt.Start))
		}
		return ds
	}())
	// Last layer first, each part once, ComputeNanos growing.
	for i, a := range got {
		if want := len(parts) - 1 - i; a.p.Part != want {
			t.Fatalf("push %d carries part %d, want %d", i, a.p.Part, want)
		}
		if i > 0 && a.p.ComputeNanos < got[i-1].p.ComputeNanos {
			t.Errorf("part %d ready at %d ns, before part %d (%d ns)", a.p.Part, a.p.ComputeNanos, got[i-1].p.Part, got[i-1].p.ComputeNanos)
		}
	}
	if hidden, total, _ := pt.Overlap(); len(pt.Sends) != len(parts) || hidden <= 0 || hidden > total {
		t.Errorf("timing: %d sends, %v of %v inside the pass", len(pt.Sends), hidden, total)
	}

	// The same batch through Trainer.Gradient on the hub's copy of the
	// weights: the same loss and gradient, bit for bit.
	data := &randBatches{r: rand.New(rand.NewPCG(1, 1))}
	data.SetBatch(64)
	x, labels := make([]float32, 64*28*28), make([]int32, 64)
	data.Next(x, labels)
	loss := r.f.tr.Gradient(x, labels)
	want := make([]float32, r.f.n)
	r.f.tr.Net.B.Download(want, r.f.tr.Net.Grads)
	bounds := append(slices.Clone(parts), r.f.n)
	for _, a := range got {
		j := a.p.Part
		if !slices.Equal([]float32(a.p.Gradient), want[bounds[j]:bounds[j+1]]) {
			t.Errorf("part %d differs from Trainer.Gradient's", j)
		}
		if a.p.Loss != float32(loss) || a.p.Samples != 64 {
			t.Errorf("part %d: loss %v over %d samples, want %v over 64", j, a.p.Loss, a.p.Samples, float32(loss))
		}
	}
}

// TestDriverPassDoesNotWaitForTheLink: while the link holds the first
// Push, the backward pass goes on to its end; every part goes out once the
// link frees, in order. It runs in a synctest bubble: the hold is virtual
// time, which passes only once every goroutine waits (the pass done, its
// first Push held at the gate), and the pass itself takes no virtual time.
func TestDriverPassDoesNotWaitForTheLink(t *testing.T) {
	synctest.Test(t, testDriverPassDoesNotWaitForTheLink)
}

func testDriverPassDoesNotWaitForTheLink(t *testing.T) {
	gate := make(chan struct{})
	r := newDriverRig(t, serialCPU(), 1, gate)
	r.start(context.Background())
	const hold = time.Second
	time.Sleep(hold)
	close(gate)
	parts := r.f.layerParts()
	for i := range parts {
		if p := recv(t, r.hub, wire.KindPush).(*wire.Push); p.Part != len(parts)-1-i {
			t.Fatalf("push %d carries part %d", i, p.Part)
		}
	}
	pt := <-r.passes
	r.hub.Send(context.Background(), &wire.Goodbye{Reason: "done"})
	if err := r.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if first := pt.Sends[0]; pt.Pass >= first.End || first.End != hold {
		t.Errorf("the pass ended at %v, the first Push's send at %v: want the pass done while the link held the push (%v)",
			pt.Pass, first.End, hold)
	}
}

// TestDriverOverlapErrors: the connection lost, or the worker stopped, in
// the middle of the backward pass: Run returns ErrHubGone (resp. leaves
// with a Goodbye and returns ctx's error), and only once the pass is over
// and has unhooked the net.
func TestDriverOverlapErrors(t *testing.T) {
	r := newDriverRig(t, cpu.NewCPU(), 10, nil)
	r.start(context.Background())
	recv(t, r.hub, wire.KindPush) // the last layer's part: the pass goes on
	r.hub.Close()
	if err := r.wait(); !errors.Is(err, ErrHubGone) {
		t.Errorf("connection lost: Run %v, want ErrHubGone", err)
	}
	if r.d.Core.Trainer().Net.OnGradsDone != nil {
		t.Error("Run returned while the pass still had the net")
	}

	r = newDriverRig(t, cpu.NewCPU(), 10, nil)
	ctx, cancel := context.WithCancel(context.Background())
	r.start(ctx)
	recv(t, r.hub, wire.KindPush)
	cancel()
	var kinds []wire.Kind
	for {
		m, err := r.hub.Recv(context.Background())
		if err != nil {
			t.Fatalf("no Goodbye: %v after %v", err, kinds)
		}
		kinds = append(kinds, m.Kind())
		if m.Kind() == wire.KindGoodbye {
			break
		}
		if m.Kind() != wire.KindPush {
			t.Fatalf("hub received %s", m.Kind())
		}
	}
	if err := r.wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped: Run %v, want context.Canceled", err)
	}
	if r.d.Core.Trainer().Net.OnGradsDone != nil {
		t.Error("Run returned while the pass still had the net")
	}
}
