package solver

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// hookNet is a residual network (fc1's output fans out, so its gradient is
// summed from two consumers) with a frozen layer in the middle.
func hookNet(t testing.TB, b gpu.Backend) *Net {
	net, err := NewNet(b, Shape{C: 6, H: 1, W: 1}, []Node{
		{Layer: NewLinear("fc1", 8)},
		{Layer: NewReLU("relu1")},
		{Layer: NewLinear("fc2", 8)},
		{Layer: NewAdd("add"), Inputs: []int{0, 2}},
		{Layer: NewLinear("frozen", 8)},
		{Layer: NewReLU("relu2")},
		{Layer: NewLinear("out", 4)},
	})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(3, 4)))
	if err := net.Freeze("frozen"); err != nil {
		t.Fatal(err)
	}
	return net
}

func hookInputs(b gpu.Backend, batch int) (x, dy gpu.Buffer) {
	r := rand.New(rand.NewPCG(5, 6))
	hx, hdy := make([]float32, batch*6), make([]float32, batch*4)
	for i := range hx {
		hx[i] = float32(r.NormFloat64())
	}
	for i := range hdy {
		hdy[i] = float32(r.NormFloat64())
	}
	x, dy = b.Alloc(len(hx)), b.Alloc(len(hdy))
	b.Upload(x, hx)
	b.Upload(dy, hdy)
	return x, dy
}

// TestOnGradsDone: the hook hears of every trainable layer, last first,
// with its offset, and what Grads holds from that offset on when it is
// called is what Backward leaves there: those gradients are final. A net
// with the hook computes the same bits as one without.
func TestOnGradsDone(t *testing.T) {
	b := cpu.NewCPU()
	const batch = 5
	ref := hookNet(t, b)
	x, dy := hookInputs(b, batch)
	ref.Forward(x, batch, true)
	ref.Backward(dy)
	want := make([]float32, ref.NumParams())
	b.Download(want, ref.Grads)

	net := hookNet(t, b)
	var offs []int
	var early [][]float32 // Grads[off:] as the hook saw it
	net.OnGradsDone = func(off int) {
		g := make([]float32, net.NumParams()-off)
		b.Download(g, b.View(net.Grads, off, len(g)))
		offs = append(offs, off)
		early = append(early, g)
	}
	net.Forward(x, batch, true)
	net.Backward(dy)
	got := make([]float32, net.NumParams())
	b.Download(got, net.Grads)
	if !slices.Equal(got, want) {
		t.Fatal("the gradient with the hook differs from the one without")
	}
	// Offsets of the trainable layers, last first: out, fc2, fc1 (frozen
	// is skipped).
	var wantOffs []int
	layers := net.Layers()
	off := 0
	for _, l := range layers {
		if l.Params > 0 && !l.Frozen {
			wantOffs = append(wantOffs, off)
		}
		off += l.Params
	}
	slices.Reverse(wantOffs)
	if !slices.Equal(offs, wantOffs) {
		t.Fatalf("hook offsets %v, want %v", offs, wantOffs)
	}
	for i, off := range offs {
		if !slices.Equal(early[i], want[off:]) {
			t.Errorf("at the hook for offset %d, Grads[%d:] was not yet final", off, off)
		}
	}

	// Everything frozen: Backward does not run and the hook is not called.
	net.FreezeAllButLast(0)
	offs = nil
	net.Forward(x, batch, true)
	net.Backward(dy)
	if len(offs) != 0 {
		t.Errorf("all frozen: hook called at %v", offs)
	}
}

// A steady-state step with a hook set allocates nothing more than one
// without (none).
func TestOnGradsDoneAllocatesNothing(t *testing.T) {
	b := cpu.NewCPU()
	net := hookNet(t, b)
	const batch = 5
	x, dy := hookInputs(b, batch)
	calls := 0
	net.OnGradsDone = func(int) { calls++ }
	step := func() {
		net.Forward(x, batch, true)
		net.Backward(dy)
	}
	step()
	if allocs := testing.AllocsPerRun(20, step); allocs != 0 {
		t.Errorf("%v allocations per steady-state step with the hook, want 0", allocs)
	}
	if calls != 3*22 { // AllocsPerRun runs once more to warm up
		t.Errorf("%d hook calls, want 3 a step", calls)
	}
}
