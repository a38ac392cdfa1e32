package worker

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/wire"
)

// TestErrorFeedbackResets: a top-k worker keeps what it did not send, and
// forgets it when the hub replaces its weights (a ResyncAnswer), because
// that residual was computed on weights it no longer holds.
func TestErrorFeedbackResets(t *testing.T) {
	f := newFakeHub(t)
	c := newWorker(t)
	take(c)
	w := f.welcome(4)
	w.Session.Compression = "topk:0.01"
	if err := c.Step("hub", w); err != nil {
		t.Fatal(err)
	}
	rd := take(c)
	if err := c.Computed(compute(t, c, rd.Compute)); err != nil {
		t.Fatal(err)
	}
	rd = take(c)
	if len(rd.Messages) != 1 {
		t.Fatalf("after Computed: %v", kinds(rd.Messages))
	}
	p := rd.Messages[0].(*wire.Push)
	if len(p.Gradient) != 0 || len(p.Enc) == 0 || len(p.Enc) > 4*f.n/50 {
		t.Fatalf("push carries %d raw floats and %d encoded bytes, want top-k only", len(p.Gradient), len(p.Enc))
	}
	nonzero := func() int {
		k := 0
		for _, v := range c.parts.fb.Residual() {
			if v != 0 {
				k++
			}
		}
		return k
	}
	if k := nonzero(); k < f.n/2 {
		t.Fatalf("residual has %d non-zero values of %d, want most: top-k sent 1%%", k, f.n)
	}
	if err := c.Step("hub", f.resync()); err != nil {
		t.Fatal(err)
	}
	if k := nonzero(); k != 0 {
		t.Errorf("after a ResyncAnswer the residual keeps %d values", k)
	}
}

// TestMergedParts: a worker steps only on the final Merged, with every
// part; a final Merged that comes without a part, or a part that does not
// decode, sends it to resync rather than step on a partial update.
func TestMergedParts(t *testing.T) {
	setup := func() (*fakeHub, *Core, []int) {
		f := newFakeHub(t)
		c := newWorker(t)
		take(c)
		w := f.welcome(0)
		w.Session.Compression = "fp16"
		w.Session.Parts = []int{0, 100, 1000}
		if err := c.Step("hub", w); err != nil {
			t.Fatal(err)
		}
		take(c)
		return f, c, []int{0, 100, 1000, f.n}
	}
	split := func(m *wire.Merged, bounds []int, j int, partial bool) *wire.Merged {
		out := *m
		out.Gradient, out.Part, out.Partial = nil, j, partial
		out.Enc = compress.Float16{}.Append(nil, m.Gradient[bounds[j]:bounds[j+1]])
		return &out
	}
	// Lossless values in fp16: the fake hub's gradient is small integers
	// times the scale, exact in half precision.
	f, c, b := setup()
	full := f.merged(0.25, 2)
	for _, j := range []int{2, 1} {
		if err := c.Step("hub", split(full, b, j, true)); err != nil {
			t.Fatal(err)
		}
		if c.Iteration() != 0 {
			t.Fatalf("stepped on partial part %d", j)
		}
	}
	if err := c.Step("hub", split(full, b, 0, false)); err != nil {
		t.Fatal(err)
	}
	if rd := take(c); c.Iteration() != 1 || c.Mismatches() != 0 || rd.Compute == nil {
		t.Fatalf("after every part: iteration %d, mismatches %d, compute %v", c.Iteration(), c.Mismatches(), rd.Compute)
	}

	f, c, b = setup()
	full = f.merged(0.25, 2)
	if err := c.Step("hub", split(full, b, 2, true)); err != nil {
		t.Fatal(err)
	}
	err := c.Step("hub", split(full, b, 0, false)) // part 1 never came
	if !errors.Is(err, ErrBadMessage) || c.Iteration() != 0 {
		t.Fatalf("final Merged without part 1: %v at iteration %d", err, c.Iteration())
	}
	if rd := take(c); !slices.Equal(kinds(rd.Messages), []wire.Kind{wire.KindResyncRequest}) {
		t.Errorf("after a missing part: %v, want a ResyncRequest", kinds(rd.Messages))
	}

	f, c, b = setup()
	bad := split(f.merged(0.25, 2), b, 1, true)
	bad.Enc = bad.Enc[:len(bad.Enc)-1]
	if err := c.Step("hub", bad); !errors.Is(err, ErrBadMessage) {
		t.Errorf("a cut part: %v, want ErrBadMessage", err)
	}
}

// TestMomentumCorrectionSession: a top-k session's worker momentum, top-k
// minimum and warm-up reach the worker's error feedback and codec (the
// warm-up's denser first push included), the velocity is forgotten with
// the residual on a ResyncAnswer, and sessions that would step nodes
// apart are refused.
func TestMomentumCorrectionSession(t *testing.T) {
	f := newFakeHub(t)
	c := newWorker(t)
	take(c)
	w := f.welcome(4)
	w.Session.Compression, w.Session.Momentum, w.Session.WorkerMomentum = "topk:0.01", 0, 0.9
	w.Session.TopKMin, w.Session.TopKWarmup = 300, 1000
	if err := c.Step("hub", w); err != nil {
		t.Fatal(err)
	}
	if m := c.parts.fb.Momentum(); m != 0.9 {
		t.Fatalf("feedback momentum %v, want 0.9", m)
	}
	rd := take(c)
	it := rd.Compute.Iteration
	if err := c.Computed(compute(t, c, rd.Compute)); err != nil {
		t.Fatal(err)
	}
	rd = take(c)
	p := rd.Messages[0].(*wire.Push)
	got := make([]float32, f.n)
	if err := compress.Decode(got, p.Enc, compress.FormatSparse); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, v := range got {
		if v != 0 {
			sent++
		}
	}
	want := c.parts.codec.(*compress.TopK).K(f.n)
	if frac := compress.WarmupFraction(0.01, it, 1000); want != max(300, int(math.Ceil(frac*float64(f.n)))) || sent != want || sent <= f.n/100 {
		t.Errorf("first push sends %d values of %d, want %d (warm-up %g, minimum 300)", sent, f.n, want, frac)
	}
	moving := 0
	for _, v := range c.parts.fb.Velocity() {
		if v != 0 {
			moving++
		}
	}
	if moving < f.n/2 {
		t.Errorf("velocity has %d non-zero values of %d", moving, f.n)
	}
	if err := c.Step("hub", f.resync()); err != nil {
		t.Fatal(err)
	}
	for i, v := range c.parts.fb.Velocity() {
		if v != 0 {
			t.Fatalf("after a ResyncAnswer the velocity keeps %g at %d", v, i)
		}
	}

	for _, bad := range []func(*wire.Session){
		func(s *wire.Session) { s.Compression, s.WorkerMomentum = "int8", 0.9 },
		func(s *wire.Session) { s.Compression, s.WorkerMomentum, s.Momentum = "topk", 0.9, 0.9 },
		func(s *wire.Session) { s.Compression, s.WorkerMomentum = "topk", 1.5 },
		func(s *wire.Session) { s.Compression, s.TopKMin = "fp16", 8 },
		func(s *wire.Session) { s.Compression, s.TopKMin = "topk", -1 },
	} {
		c := newWorker(t)
		take(c)
		w := f.welcome(4)
		bad(&w.Session)
		if err := c.Step("hub", w); !errors.Is(err, ErrModel) {
			t.Errorf("session %+v: %v, want ErrModel", w.Session, err)
		}
	}
}
