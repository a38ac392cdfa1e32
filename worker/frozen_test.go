package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// Sessions with parts in frozen layers (Session.ZeroParts): the worker
// pushes only the other parts and steps with zeros in the zero ones.

// paramLayers returns the names of the fake hub's layers with parameters.
func (f *fakeHub) paramLayers() []string {
	var out []string
	for _, l := range f.tr.Net.Layers() {
		if l.Params > 0 {
			out = append(out, l.Name)
		}
	}
	return out
}

// TestDriverZeroParts runs one real pass of the driver in two sessions: a
// frozen prefix without overlap (parts: the prefix, zero, and the last
// layer) and a frozen middle layer with overlap. Only the parts that are
// not zero are pushed, each once, each bit for bit Trainer.Gradient's on
// a net frozen the same way; then the Merged of only those parts steps
// the worker to the fake hub's weights.
func TestDriverZeroParts(t *testing.T) {
	f := newFakeHub(t)
	layers, names := f.layerParts(), f.paramLayers()
	for _, tt := range []struct {
		name   string
		frozen []string
		parts  []int
		zero   []int
	}{
		{"frozen prefix, one trainable part", names[:len(names)-1], []int{0, layers[len(layers)-1]}, []int{0}},
		{"frozen middle layer, overlap", names[2:3], layers, []int{2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newDriverRig(t, cpu.NewCPU(), 1, nil)
			if err := r.f.tr.Net.Freeze(tt.frozen...); err != nil {
				t.Fatal(err)
			}
			go func() { r.done <- r.d.Run(context.Background()) }()
			recv(t, r.hub, wire.KindRegister)
			w := r.f.welcome(64)
			w.Session.Parts, w.Session.ZeroParts, w.Session.Frozen = tt.parts, tt.zero, tt.frozen
			if err := r.hub.Send(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			var live []int
			for j := len(tt.parts) - 1; j >= 0; j-- {
				if !slices.Contains(tt.zero, j) {
					live = append(live, j)
				}
			}
			var got []*wire.Push
			for range live {
				got = append(got, recv(t, r.hub, wire.KindPush).(*wire.Push))
			}
			var pt PassTiming
			select {
			case pt = <-r.passes:
			case <-time.After(10 * time.Second):
				t.Fatal("no pass timing")
			}
			if len(pt.Sends) != len(live) {
				t.Errorf("the pass sent %d pushes, want %d (parts %v)", len(pt.Sends), len(live), live)
			}

			data := &randBatches{r: rand.New(rand.NewPCG(1, 1))}
			data.SetBatch(64)
			x, labels := make([]float32, 64*28*28), make([]int32, 64)
			data.Next(x, labels)
			r.f.tr.Gradient(x, labels)
			want := make([]float32, r.f.n)
			r.f.tr.Net.B.Download(want, r.f.tr.Net.Grads)
			bounds := append(slices.Clone(tt.parts), r.f.n)
			for i, p := range got {
				j := p.Part
				if j != live[i] {
					t.Fatalf("push %d carries part %d, want %d", i, j, live[i])
				}
				if !slices.Equal([]float32(p.Gradient), want[bounds[j]:bounds[j+1]]) {
					t.Errorf("part %d differs from Trainer.Gradient's", j)
				}
			}

			// The hub's step on those parts alone, zeros elsewhere.
			g := make([]float32, r.f.n)
			for _, p := range got {
				copy(g[bounds[p.Part]:], p.Gradient)
			}
			k, lr := uint64(r.f.tr.Iter), r.f.tr.LR()
			r.f.tr.Net.B.Upload(r.f.tr.Net.Grads, g)
			r.f.tr.Apply()
			for i, p := range got {
				m := &wire.Merged{Header: wire.Header{Iteration: k}, Part: p.Part, Partial: i < len(got)-1,
					Gradient: p.Gradient, LR: lr}
				if !m.Partial {
					m.WeightsHash, m.BatchSizes = state.NetHash(r.f.tr.Net), wire.BatchSizes{"w0": 64}
				}
				if err := r.hub.Send(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			// The next iteration's pushes show the step was taken and its
			// hash matched (a mismatch sends a ResyncRequest instead).
			for range live {
				if p := recv(t, r.hub, wire.KindPush).(*wire.Push); p.Iteration != k+1 {
					t.Fatalf("push for iteration %d after Merged %d", p.Iteration, k)
				}
			}
			r.hub.Send(context.Background(), &wire.Goodbye{Reason: "done"})
			if err := r.wait(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := r.d.Core.Mismatches(); n != 0 {
				t.Errorf("%d weight mismatches", n)
			}
		})
	}
}

// TestZeroPartsRefused: a session whose zero parts do not fit its parts,
// or cover parameters that learn on this worker, is refused with
// ErrModel (and a Reject to the hub) rather than dropping a gradient.
func TestZeroPartsRefused(t *testing.T) {
	f := newFakeHub(t)
	layers, names := f.layerParts(), f.paramLayers()
	prefix := names[:len(names)-1]
	for _, tt := range []struct {
		name   string
		frozen []string
		parts  []int
		zero   []int
	}{
		{"zero part out of range", prefix, []int{0, layers[4]}, []int{2}},
		{"negative zero part", prefix, []int{0, layers[4]}, []int{-1}},
		{"zero parts not increasing", names[:3], layers, []int{1, 0}},
		{"zero part that learns here", nil, []int{0, layers[4]}, []int{0}},
		{"zero part partly learning", names[:2], []int{0, layers[3]}, []int{0}},
		{"every part zero", names, []int{0, layers[4]}, []int{0, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newWorker(t)
			take(c)
			w := f.welcome(4)
			w.Session.Parts, w.Session.ZeroParts, w.Session.Frozen = tt.parts, tt.zero, tt.frozen
			if err := c.Step("hub", w); !errors.Is(err, ErrModel) {
				t.Fatalf("session parts %v zero %v frozen %v: %v, want ErrModel", tt.parts, tt.zero, tt.frozen, err)
			}
			if rd := take(c); len(rd.Messages) != 1 || rd.Messages[0].Kind() != wire.KindReject {
				t.Errorf("sent %v, want a Reject", kinds(rd.Messages))
			}
		})
	}
}
