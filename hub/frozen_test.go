package hub_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// Fine-tuning with frozen layers: parts that lie wholly in frozen layers
// (Session.ZeroParts) are neither pushed nor merged.

// TestSessionParts: the parts and zero parts for lenet5 (five layers with
// parameters: 156, 2,416, 48,120, 10,164 and 850 values) frozen in
// several ways.
func TestSessionParts(t *testing.T) {
	b := cpu.NewCPU()
	m, err := models.Build(b, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	layers := hub.PartBounds(m)
	if want := []int{0, 156, 2572, 50692, 60856}; !slices.Equal(layers, want) {
		t.Fatalf("lenet5's layer parts %v, want %v", layers, want)
	}
	var names []string
	for _, l := range m.Layers() {
		if l.Params > 0 {
			names = append(names, l.Name)
		}
	}
	for _, tt := range []struct {
		name       string
		freeze     func()
		overlap    bool
		starts     []int
		zero       []int
		trainables int // the net's trainable values, for the zero check
	}{
		{"nothing frozen", func() {}, false, []int{0}, nil, 61706},
		{"nothing frozen, overlap", func() {}, true, layers, nil, 61706},
		{"last layer trains", func() { m.FreezeAllButLast(1) }, false, []int{0, 60856}, []int{0}, 850},
		{"last layer trains, overlap", func() { m.FreezeAllButLast(1) }, true, layers, []int{0, 1, 2, 3}, 850},
		{"last two train", func() { m.FreezeAllButLast(2) }, false, []int{0, 50692}, []int{0}, 11014},
		{"a middle layer frozen", func() { m.Freeze(names[2]) }, false, []int{0, 2572, 50692}, []int{1}, 13586},
		{"a middle layer frozen, overlap", func() { m.Freeze(names[2]) }, true, layers, []int{2}, 13586},
		{"everything frozen", func() { m.FreezeAllButLast(0) }, false, []int{0}, nil, 0},
		{"everything frozen, overlap", func() { m.FreezeAllButLast(0) }, true, layers, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m.Unfreeze()
			tt.freeze()
			starts, zero := hub.SessionParts(m, tt.overlap)
			if !slices.Equal(starts, tt.starts) || !slices.Equal(zero, tt.zero) {
				t.Errorf("SessionParts = %v, %v; want %v, %v", starts, zero, tt.starts, tt.zero)
			}
			// Whatever lies outside the zero parts is what learns, at least.
			out := 0
			for j := range starts {
				hi := m.NumParams()
				if j+1 < len(starts) {
					hi = starts[j+1]
				}
				if !slices.Contains(zero, j) {
					out += hi - starts[j]
				}
			}
			sum := 0
			for _, r := range m.Trainable() {
				sum += r.Len
			}
			if sum != tt.trainables || (zero != nil && out != sum) {
				t.Errorf("%d values outside the zero parts, %d trainable (want %d)", out, sum, tt.trainables)
			}
		})
	}
}

// TestFrozenPrefixTraining fine-tunes lenet5's last layer (or last two)
// with every codec, with and without layer-wise overlap (parts pushed by
// Computed, or one by one with PartDone), through a deadline a silent
// worker misses and a worker that joins mid-run. The harness checks every
// round that each worker at the hub's iteration holds the hub's weights
// bit for bit; the frozen weights must not move, and the bytes up and down
// must be those of the trainable layers only.
func TestFrozenPrefixTraining(t *testing.T) {
	type mode struct {
		codec     string
		overlap   bool
		partwise  bool
		trainLast int
	}
	var modes []mode
	for _, c := range []string{"none", "fp16", "int8", "topk:0.05"} {
		modes = append(modes, mode{c, false, false, 1}, mode{c, true, false, 1}, mode{c, true, true, 1},
			mode{c, false, false, 2}, mode{c, true, true, 2})
	}
	for _, md := range modes {
		t.Run(fmt.Sprintf("%s/overlap=%v/partwise=%v/last=%d", md.codec, md.overlap, md.partwise, md.trainLast), func(t *testing.T) {
			cfg := trainConfig(2, 8)
			cfg.Compression, cfg.Overlap = md.codec, md.overlap
			cfg.DeadlineTicks = 5
			h := newFrozenHub(t, cfg, 3, md.trainLast)
			net := h.Trainer().Net
			before := state.Params(net)
			trainable := net.Trainable()
			if len(trainable) != 1 || trainable[0].Off+trainable[0].Len != net.NumParams() {
				t.Fatalf("trainable ranges %v: want one suffix", trainable)
			}
			lo, values := trainable[0].Off, trainable[0].Len
			ds := synthetic(t, 300)
			n := newNet(t, h, ds, 2)
			for _, nd := range n.nodes {
				nd.partwise = md.partwise
			}
			slow := n.byID["w1"]
			slow.silent = true
			n.run(func() bool { return n.count(hub.EventLate) > 0 })
			slow.silent = false
			n.compute(slow, *slow.stalled) // too late: refused as stale
			n.run(func() bool { return h.Iteration() >= 3 })
			joiner := n.addNode(ds, 2, 3)
			joiner.partwise = md.partwise
			n.finish()

			for _, err := range n.hubErrs {
				if !errors.Is(err, hub.ErrStale) {
					t.Errorf("refusal %v", err)
				}
			}
			for _, name := range []string{"w0", "w1", "w2"} {
				if !slices.Contains(n.checked[name], 8) {
					t.Errorf("%s hash checked at %v, want through 8", name, n.checked[name])
				}
			}
			after := state.Params(net)
			if !slices.Equal(after[:lo], before[:lo]) {
				t.Error("frozen weights moved")
			}
			if slices.Equal(after[lo:], before[lo:]) {
				t.Error("the trainable layers did not learn")
			}
			for _, e := range n.events {
				if e.Kind != hub.EventMerged || e.Workers == 0 {
					continue
				}
				up, down := e.BytesUp/int64(e.Workers), e.BytesDown
				if md.codec == "none" && up != 4*int64(values) {
					t.Errorf("iteration %d: %d bytes up per worker, want %d (the %d trainable floats)", e.Iteration, up, 4*values, values)
				}
				// Compressed: never more than the trainable part raw
				// (top-k's sparse merge can reach fp16's size plus indices).
				if up > 4*int64(values) || down > int64(e.Workers+1)*6*int64(values) {
					t.Errorf("iteration %d: %d bytes up per worker, %d down, for %d trainable values", e.Iteration, up, down, values)
				}
			}
		})
	}
}

// TestFrozenMatchesSingleDevice: with the frozen prefix not sent, the
// cooperative run still equals one trainer stepping on the union batches
// with the same layers frozen (up to float rounding), with and without
// overlap.
func TestFrozenMatchesSingleDevice(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		t.Run(fmt.Sprintf("overlap=%v", overlap), func(t *testing.T) {
			const iters = 12
			cfg := trainConfig(3, iters)
			cfg.Overlap = overlap
			h := newFrozenHub(t, cfg, 7, 2)
			n := newNet(t, h, synthetic(t, 900), 3)
			n.finish()
			if len(n.hubErrs) != 0 {
				t.Fatalf("hub refused: %v", n.hubErrs)
			}
			b := cpu.NewCPU()
			m, err := models.Build(b, "lenet5", models.Config{})
			if err != nil {
				t.Fatal(err)
			}
			m.InitParams(rand.New(rand.NewPCG(7, 1)))
			m.FreezeAllButLast(2)
			tr := solver.NewTrainer(m, solver.NewSGD(b, m.NumParams(), 0.9, 0, false), solver.Constant(0.05))
			for k := range uint64(iters) {
				var x []float32
				var labels []int32
				for _, nd := range n.nodes {
					x = append(x, nd.batches[k].x...)
					labels = append(labels, nd.batches[k].labels...)
				}
				if _, err := tr.Step(x, labels); err != nil {
					t.Fatal(err)
				}
			}
			got, want := state.Params(h.Trainer().Net), state.Params(m)
			if d := relDiff(got, want); d > 1e-5 {
				t.Errorf("hub weights differ from the single-device run by %.2g (relative)", d)
			}
		})
	}
}

// TestZeroPartRefused: a push of a part in frozen layers is refused, and a
// worker need not send it for the barrier to close.
func TestZeroPartRefused(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		cfg := trainConfig(1, 3)
		cfg.Compression, cfg.Overlap = "fp16", overlap
		h := newFrozenHub(t, cfg, 3, 1)
		if err := h.Step("w0", &wire.Register{}); err != nil {
			t.Fatal(err)
		}
		var sess wire.Session
		for _, e := range h.Ready().Messages {
			if w, ok := e.Msg.(*wire.Welcome); ok {
				sess = w.Session
			}
		}
		h.Advance()
		last := len(sess.Parts) - 1
		if last < 1 || len(sess.ZeroParts) != last || sess.ZeroParts[0] != 0 {
			t.Fatalf("overlap %v: session parts %v, zero %v", overlap, sess.Parts, sess.ZeroParts)
		}
		n := h.Trainer().Net.NumParams()
		zero := &wire.Push{Samples: 32, Part: 0, Enc: compress.Float16{}.Append(nil, make([]float32, sess.Parts[1]))}
		if err := h.Step("w0", zero); !errors.Is(err, hub.ErrBadPart) {
			t.Errorf("overlap %v: push of a zero part: %v, want ErrBadPart", overlap, err)
		}
		g := make([]float32, n-sess.Parts[last])
		g[0] = 1
		if err := h.Step("w0", &wire.Push{Samples: 32, Part: last, Enc: compress.Float16{}.Append(nil, g)}); err != nil {
			t.Fatal(err)
		}
		var merged []*wire.Merged
		for _, e := range h.Ready().Messages {
			if m, ok := e.Msg.(*wire.Merged); ok {
				merged = append(merged, m)
			}
		}
		if len(merged) != 1 || merged[0].Part != last || merged[0].Partial || h.Iteration() != 1 {
			t.Errorf("overlap %v: after the one trainable part, %d Merged (want 1 final of part %d), hub at %d",
				overlap, len(merged), last, h.Iteration())
		}
	}
}
