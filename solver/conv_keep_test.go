package solver_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// copyKeeper is the CPU backend with a gpu.ConvColumnKeeper whose "column
// matrices" are a copy of x taken by ConvForwardKeep: ConvBackwardFilterCols
// computes the filter gradient from that copy. It gives ConvBackwardFilter's
// bits exactly when solver.Conv2D uses the kept buffer only for the x of the
// Forward that filled it, so any stale use shows in the gradients. It grants
// buffers for batches up to grant and records every request.
type copyKeeper struct {
	*cpu.CPU
	grant      int
	asks       []int // the batch of every ConvKeepColumns
	fwd, bwd   int   // ConvForwardKeep and ConvBackwardFilterCols calls
	grantedLen []int // lengths of the buffers granted
}

var _ gpu.ConvColumnKeeper = (*copyKeeper)(nil)

func (k *copyKeeper) ConvKeepColumns(g gpu.ConvGeom) gpu.Buffer {
	k.asks = append(k.asks, g.N)
	if g.N > k.grant {
		return nil
	}
	n := g.N * g.C * g.H * g.W
	k.grantedLen = append(k.grantedLen, n)
	return k.Alloc(n)
}

func (k *copyKeeper) ConvForwardKeep(g gpu.ConvGeom, y, x, w, bias, ws, cols gpu.Buffer) {
	k.fwd++
	k.ConvForward(g, y, x, w, bias, ws)
	k.Copy(k.View(cols, 0, x.Len()), x)
}

func (k *copyKeeper) ConvBackwardFilterCols(g gpu.ConvGeom, dw, dbias, dy, ws, cols gpu.Buffer) {
	k.bwd++
	k.ConvBackwardFilter(g, dw, dbias, dy, k.View(cols, 0, g.N*g.C*g.H*g.W), ws)
}

// TestConvKeptColumnsRule checks solver.Conv2D's use of a
// gpu.ConvColumnKeeper on the CPU (copyKeeper), so that the rule is tested
// wherever the solver's tests run, not only on an OpenCL device: training
// steps with evaluations between them, a smaller batch and partly frozen
// networks give the bits of a backend without a keeper; each layer asks
// for a buffer once per larger batch, at its first Backward with filter
// gradients; a refused larger batch is not asked again and leaves the
// buffer for the smaller one in use. Its buffers are host slices, which
// Go's == cannot compare: Conv2D must tell its input apart without it.
func TestConvKeptColumnsRule(t *testing.T) {
	build := map[string]func(gpu.Backend) (*solver.Net, error){
		"lenet5": func(b gpu.Backend) (*solver.Net, error) { return models.Build(b, "lenet5", models.Config{}) },
		"residual": func(b gpu.Backend) (*solver.Net, error) {
			return solver.NewNet(b, solver.Shape{C: 3, H: 8, W: 8}, residualNodes())
		},
	}
	for _, model := range []string{"lenet5", "residual"} {
		for _, last := range []int{-1, 2} { // -1: all layers learn
			k := &copyKeeper{CPU: cpu.NewCPU(), grant: 1 << 30}
			var runs [2][][]float32
			for i, b := range []gpu.Backend{k, cpu.NewCPU()} {
				runs[i] = frozenFingerprint(t, build[model], b, last)
			}
			sameFingerprint(t, fmt.Sprintf("%s (last %d)", model, last), runs[0], runs[1], "with kept columns", "without")
			if k.bwd == 0 && last < 0 {
				t.Errorf("%s: no Backward read kept columns", model)
			}
		}
	}

	// The asking rule, on lenet5's two convolutions; the parameters end as
	// on a backend without a keeper.
	k := &copyKeeper{CPU: cpu.NewCPU(), grant: 6}
	const convs = 2
	steps := []struct {
		forwardFirst bool // a training Forward at 6 without a Backward first (its columns kept, never read)
		n            int
		asks         []int // requests after the step
		fwd, bwd     int   // kept-column calls in the step
		what         string
	}{
		{false, 6, []int{6, 6}, 0, 0, "first step: both layers ask at their Backward"},
		{false, 6, []int{6, 6}, convs, convs, "second step at 6: kept"},
		{false, 4, []int{6, 6}, convs, convs, "smaller batch: kept, no new request"},
		{false, 10, []int{6, 6, 10, 10}, 0, 0, "larger batch: asked once, refused"},
		{false, 10, []int{6, 6, 10, 10}, 0, 0, "larger batch again: not asked again"},
		{false, 6, []int{6, 6, 10, 10}, convs, convs, "back at 6: the buffer for 6 is still used"},
		{true, 10, []int{6, 6, 10, 10}, convs, 0, "a kept training Forward alone, then a step at 10: expands x"},
	}
	var params [2][]float32
	for bi, b := range []gpu.Backend{k, cpu.NewCPU()} {
		net, err := models.Build(b, "lenet5", models.Config{})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, 8))
		net.InitParams(r)
		tr := solver.NewTrainer(net, solver.NewSGD(b, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
		size := net.In.Size()
		x := make([]float32, 10*size)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		labels := make([]int32, 10)
		for i := range labels {
			labels[i] = int32(r.IntN(10))
		}
		for _, s := range steps {
			f0, b0 := k.fwd, k.bwd
			if s.forwardFirst {
				in := b.Alloc(6 * size)
				b.Upload(in, x[size:7*size])
				net.Forward(in, 6, true)
			}
			if _, err := tr.Step(x[:s.n*size], labels[:s.n]); err != nil {
				t.Fatal(err)
			}
			if bi == 0 && (!slices.Equal(k.asks, s.asks) || k.fwd-f0 != s.fwd || k.bwd-b0 != s.bwd) {
				t.Errorf("%s: requests %v, kept forwards %d, kept backwards %d; want %v, %d, %d", s.what, k.asks, k.fwd-f0, k.bwd-b0, s.asks, s.fwd, s.bwd)
			}
		}
		params[bi] = make([]float32, net.NumParams())
		b.Download(params[bi], net.Params)
	}
	for i := range params[0] {
		if math.Float32bits(params[0][i]) != math.Float32bits(params[1][i]) {
			t.Fatalf("after the steps: parameter %d is %v with kept columns, %v without", i, params[0][i], params[1][i])
		}
	}
}

// TestConvFrozenDropsKeptColumns checks that a convolution frozen after its
// column buffer was granted (below every trainable layer, so it gets no
// Backward at all) drops the buffer at once and writes no kept columns (the
// frozen prefix runs as inference), and asks again once it learns again.
// With the frozen prefix in training mode (SetFrozenInference(false)) it
// stops writing them after two training Forwards that no Backward read.
func TestConvFrozenDropsKeptColumns(t *testing.T) {
	k := &copyKeeper{CPU: cpu.NewCPU(), grant: 1 << 30}
	net, err := models.Build(k, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	net.InitParams(r)
	tr := solver.NewTrainer(net, solver.NewSGD(k, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	x := make([]float32, 6*net.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	labels := []int32{1, 2, 3, 4, 5, 6}
	step := func() (fwd, bwd, asks int) {
		f0, b0, a0 := k.fwd, k.bwd, len(k.asks)
		if _, err := tr.Step(x, labels); err != nil {
			t.Fatal(err)
		}
		return k.fwd - f0, k.bwd - b0, len(k.asks) - a0
	}
	const convs = 2
	step()
	if f, b, _ := step(); f != convs || b != convs {
		t.Fatalf("learning: %d kept forwards, %d kept backwards, want %d", f, b, convs)
	}
	net.FreezeAllButLast(3) // lenet5's three fully connected layers learn, its convolutions do not
	if f, b, a := step(); f != 0 || b != 0 || a != 0 {
		t.Errorf("frozen, as inference: %d kept forwards, %d kept backwards, %d requests, want none", f, b, a)
	}
	net.FreezeAllButLast(100)
	step()
	net.SetFrozenInference(false)
	net.FreezeAllButLast(3)
	for i := 0; i < 2; i++ {
		if f, b, _ := step(); f != convs || b != 0 {
			t.Fatalf("frozen in training mode, step %d: %d kept forwards (the buffer is still there), %d kept backwards, want %d and 0", i, f, b, convs)
		}
	}
	if f, b, a := step(); f != 0 || b != 0 || a != 0 {
		t.Errorf("frozen in training mode: %d kept forwards, %d kept backwards, %d requests, want none", f, b, a)
	}
	net.FreezeAllButLast(100)
	if f, b, a := step(); f != 0 || b != 0 || a != convs {
		t.Errorf("learning again: %d kept forwards, %d kept backwards, %d requests, want 0, 0 and %d", f, b, a, convs)
	}
	if f, b, _ := step(); f != convs || b != convs {
		t.Errorf("learning again, next step: %d kept forwards, %d kept backwards, want %d", f, b, convs)
	}
}
