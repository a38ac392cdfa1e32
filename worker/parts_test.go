package worker

import (
	"errors"
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
