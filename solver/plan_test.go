package solver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
)

// sharing never puts two tensors whose lives overlap in one buffer, every
// buffer is as large as its largest tensor, and it uses the fewest buffers
// possible: as many as are live at the busiest step.
func TestSharingKeepsLiveTensorsApart(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for trial := 0; trial < 300; trial++ {
		ts := make([]life, 1+r.IntN(30))
		steps := 1 + r.IntN(20)
		for i := range ts {
			from := r.IntN(steps)
			ts[i] = life{from, from + r.IntN(4), 1 + r.IntN(100)}
		}
		slot, size := sharing(ts, true)
		busiest := 0
		for s := 0; s <= steps+4; s++ {
			live := 0
			for _, l := range ts {
				if l.from <= s && s <= l.to {
					live++
				}
			}
			busiest = max(busiest, live)
		}
		if len(size) != busiest {
			t.Fatalf("trial %d: %d buffers, the busiest step has %d live tensors", trial, len(size), busiest)
		}
		for a := range ts {
			if size[slot[a]] < ts[a].size {
				t.Fatalf("trial %d: tensor %d of %d elements in buffer %d of %d", trial, a, ts[a].size, slot[a], size[slot[a]])
			}
			for b := a + 1; b < len(ts); b++ {
				if slot[a] == slot[b] && ts[a].from <= ts[b].to && ts[b].from <= ts[a].to {
					t.Fatalf("trial %d: tensors %v and %v overlap in buffer %d", trial, ts[a], ts[b], slot[a])
				}
			}
		}
		slot, size = sharing(ts, false)
		for a := range ts {
			if slot[a] != a || size[a] != ts[a].size {
				t.Fatalf("unshared: tensor %d in buffer %d of %d", a, slot[a], size[a])
			}
		}
	}
}

// What a chain keeps for Backward follows what each layer's Backward reads,
// and frozen layers below the trainable ones keep nothing; an inference
// Forward's outputs take two buffers used in turn.
func TestChainPlan(t *testing.T) {
	n, err := NewNet(cpu.NewCPU(), Shape{3, 8, 8}, []Node{
		{Layer: NewConv2D("c1", ConvConfig{Out: 4, KH: 3, PadH: 1, PadW: 1})}, // 4x8x8 = 256: the largest
		{Layer: NewReLU("r1")}, // 256
		{Layer: NewMaxPool2D("p1", PoolConfig{KH: 2, StrideH: 2})},            // 4x4x4 = 64
		{Layer: NewConv2D("c2", ConvConfig{Out: 6, KH: 3, PadH: 1, PadW: 1})}, // 96
		{Layer: NewReLU("r2")},      // 96
		{Layer: NewFlatten("f")},    // 96
		{Layer: NewLinear("fc", 5)}, // 5
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.evalSize) != 2 || slices.Max(n.evalSize) != 256 {
		t.Errorf("inference outputs: buffers of %v elements per sample, want two, the larger of 256", n.evalSize)
	}
	for _, c := range []struct {
		train    int // FreezeAllButLast's k; -1 for none frozen
		kept     int
		training int // at most
	}{
		// c1's output is read only by r1's Forward (ReLU's Backward reads
		// its output); p1 reads r1's, c2 p1's, r2 its own, fc f's; the
		// network's output is kept. The gradients need two buffers of 256.
		{-1, 256 + 64 + 96 + 96 + 5, 256 + 64 + 96 + 96 + 5 + 2*256},
		// Only fc runs Backward: f's output and the network's are kept; the
		// forward pass needs two buffers of 256 and fc's gradient 5.
		{1, 96 + 5, 2*256 + 5},
		{0, 5, 2 * 256},
	} {
		if c.train >= 0 {
			n.FreezeAllButLast(c.train)
		}
		u := n.Buffers(1)
		if u.Outputs != 256+256+64+96+96+96+5 || u.Kept != c.kept || u.Training < u.Kept || u.Training > c.training {
			t.Errorf("trainable %d: %+v, want %d kept and at most %d in training buffers", c.train, u, c.kept, c.training)
		}
		if c.train == 0 && (u.Training != u.Inference || len(n.trainSize) != len(n.evalSize)) {
			t.Errorf("all frozen: training buffers %v, inference %v: want the same", n.trainSize, n.evalSize)
		}
	}
}

// Every layer of this package says what its Backward reads.
func TestLayersSayWhatBackwardReads(t *testing.T) {
	for _, l := range []Layer{
		NewConv2D("c", ConvConfig{Out: 1, KH: 1}), NewLinear("l", 1), NewReLU("r"), NewReLU6("r6"),
		NewBatchNorm("b", 1e-5, 0.1), NewMaxPool2D("m", PoolConfig{KH: 2}), NewAvgPool2D("a", PoolConfig{KH: 2}),
		NewFlatten("f"), NewAdd("add"), NewConcat("cat"), NewDropout("d", 0.5),
	} {
		if _, ok := l.(BackwardReader); !ok {
			t.Errorf("%s (%T) does not implement BackwardReader: the network keeps all it could read", l.Name(), l)
		}
	}
}

// randomDAG builds a network of linear, ReLU, add and concat layers on
// vectors, with random fan-out (a node feeds up to three later ones) and
// skip connections from the input.
func randomDAG(t *testing.T, r *rand.Rand, layers int) *Net {
	t.Helper()
	var nodes []Node
	var widths []int // per node, output elements per sample
	const inW = 4
	width := func(j int) int {
		if j == Input {
			return inW
		}
		return widths[j]
	}
	pick := func(i int) int { return r.IntN(i+1) - 1 } // Input or an earlier node
	for i := 0; i < layers; i++ {
		name := fmt.Sprintf("n%d", i)
		switch k := r.IntN(6); {
		case i == 0 || k <= 1:
			in := pick(i)
			out := 2 + r.IntN(6)
			nodes = append(nodes, Node{Layer: NewLinear(name, out), Inputs: []int{in}})
			widths = append(widths, out)
		case k == 2:
			in := pick(i)
			nodes = append(nodes, Node{Layer: NewReLU(name), Inputs: []int{in}})
			widths = append(widths, width(in))
		case k == 3:
			// Add needs equal widths: sum nodes of one width, else fall back to a linear.
			a := pick(i)
			var same []int
			for j := Input; j < i; j++ {
				if j != a && width(j) == width(a) {
					same = append(same, j)
				}
			}
			if len(same) == 0 {
				nodes = append(nodes, Node{Layer: NewLinear(name, width(a)), Inputs: []int{a}})
				widths = append(widths, width(a))
				continue
			}
			ins := []int{a, same[r.IntN(len(same))]}
			nodes = append(nodes, Node{Layer: NewAdd(name), Inputs: ins})
			widths = append(widths, width(a))
		default:
			a, b := pick(i), pick(i)
			if a == b {
				b = i - 1
				if a == b {
					a = Input
				}
			}
			nodes = append(nodes, Node{Layer: NewConcat(name), Inputs: []int{a, b}})
			widths = append(widths, width(a)+width(b))
		}
	}
	// The head reads the last node and two others, so most nodes matter.
	head := []int{layers - 1, pick(layers - 1), pick(layers - 1)}
	slices.Sort(head)
	head = slices.Compact(head)
	w := 0
	for _, j := range head {
		w += width(j)
	}
	if len(head) > 1 {
		nodes = append(nodes, Node{Layer: NewConcat("headcat"), Inputs: head})
	} else {
		nodes = append(nodes, Node{Layer: NewReLU("headrelu"), Inputs: head})
	}
	nodes = append(nodes, Node{Layer: NewLinear("head", 3)})
	n, err := NewNet(cpu.NewCPU(), Shape{inW, 1, 1}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// netRun is what a training step and an evaluation leave behind.
type netRun struct{ grads, params, logits []float32 }

// runSteps trains n for a few SGD steps at batch 5 with an evaluation at
// batch 7 between them, and returns the last gradient, the weights and the
// last logits.
func runSteps(n *Net, seed uint64) netRun {
	b := n.B
	r := rand.New(rand.NewPCG(seed, 1))
	n.InitParams(r)
	n.SetRand(rand.New(rand.NewPCG(seed, 2)))
	tr := NewTrainer(n, NewSGD(b, n.NumParams(), 0.9, 0, false), Constant(0.05))
	x := make([]float32, 7*n.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	labels := make([]int32, 5)
	for i := range labels {
		labels[i] = int32(r.IntN(n.Out.Size()))
	}
	var logits []float32
	for s := 0; s < 3; s++ {
		if _, err := tr.Step(x[:5*n.In.Size()], labels); err != nil {
			panic(err)
		}
		logits = download(b, tr.Logits(x, 7))
	}
	tr.Gradient(x[:5*n.In.Size()], labels)
	return netRun{download(b, n.Grads), download(b, n.Params), logits}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func (a netRun) diff(b netRun) string {
	switch {
	case !sameBits(a.grads, b.grads):
		return "gradients"
	case !sameBits(a.params, b.params):
		return "weights"
	case !sameBits(a.logits, b.logits):
		return "logits"
	}
	return ""
}

// Shared buffers give the bits of unshared ones on random DAGs with fan-out,
// skip connections, adds and concatenations, with and without frozen layers.
func TestSharedBuffersMatchUnsharedOnRandomDAGs(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	fewer := 0
	for trial := 0; trial < 60; trial++ {
		layers := 3 + r.IntN(12)
		freeze := r.IntN(3) // 0: none, 1: all but the last 1..3, 2: a random set
		var names []string  // frozen when freeze is 2
		for _, l := range randomDAG(t, rand.New(rand.NewPCG(uint64(trial), 5)), layers).Layers() {
			if l.Params > 0 && r.IntN(2) == 0 {
				names = append(names, l.Name)
			}
		}
		net := func(share bool) *Net {
			n := randomDAG(t, rand.New(rand.NewPCG(uint64(trial), 5)), layers)
			n.SetSharing(share)
			switch freeze {
			case 1:
				n.FreezeAllButLast(1 + trial%3)
			case 2:
				if err := n.Freeze(names...); err != nil {
					t.Fatal(err)
				}
			}
			return n
		}
		shared, alone := net(true), net(false)
		got, want := runSteps(shared, uint64(trial)), runSteps(alone, uint64(trial))
		if d := got.diff(want); d != "" {
			t.Fatalf("trial %d (%d layers, freeze %d): shared and unshared %s differ", trial, layers, freeze, d)
		}
		if us, ua := shared.Buffers(5), alone.Buffers(5); us.Training < ua.Training || us.Inference < ua.Inference {
			fewer++
		}
	}
	if fewer < 30 {
		t.Errorf("sharing saved memory in only %d of 60 networks", fewer)
	}
}

// The comparison above catches a plan that lets live gradients share memory:
// every gradient in one buffer changes the result.
func TestSharedComparisonCatchesOverlap(t *testing.T) {
	build := func() *Net {
		n, err := NewNet(cpu.NewCPU(), Shape{3, 1, 1}, []Node{
			{Layer: NewLinear("a", 4)},
			{Layer: NewReLU("r")},
			{Layer: NewLinear("b", 4)},
			{Layer: NewAdd("add"), Inputs: []int{2, 0}},
			{Layer: NewLinear("out", 2)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	want := runSteps(build(), 1)
	if got := runSteps(build(), 1); got.diff(want) != "" {
		t.Fatalf("two identical runs differ in %s", got.diff(want))
	}
	broken := build()
	for i := range broken.nodes {
		nd := &broken.nodes[i]
		if nd.dslot >= 0 {
			nd.dslot = 0
		}
		for k := range nd.sslot {
			if nd.sslot[k] >= 0 {
				nd.sslot[k] = 0
			}
		}
		broken.trainSize[0] = max(broken.trainSize[0], nd.shape.Size())
	}
	if got := runSteps(broken, 1); got.diff(want) == "" {
		t.Error("gradients all in one buffer gave the same bits: the comparison cannot see overlaps")
	}
}

// Training steps and evaluations at other batch sizes alternate without
// allocating once each has run, on a residual network.
func TestTrainAndEvalAlternateWithoutAllocating(t *testing.T) {
	b := cpu.NewCPU()
	net, err := NewNet(b, Shape{C: 8, H: 1, W: 1}, []Node{
		{Layer: NewLinear("fc1", 8)},
		{Layer: NewReLU("relu1")},
		{Layer: NewLinear("fc2", 8)},
		{Layer: NewAdd("add"), Inputs: []int{0, 2, 1}}, // fc1 and relu1 fan out
		{Layer: NewLinear("out", 4)},
	})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	x, xe, dy := b.Alloc(5*8), b.Alloc(9*8), b.Alloc(5*4)
	b.Fill(x, 0.5)
	b.Fill(xe, -0.25)
	b.Fill(dy, 0.1)
	cycle := func() {
		net.Forward(x, 5, true)
		net.Backward(dy)
		net.Forward(xe, 9, false)
	}
	cycle()
	if allocs := testing.AllocsPerRun(10, cycle); allocs != 0 {
		t.Errorf("%v allocations per train-and-eval cycle, want 0", allocs)
	}
}

// An inference Forward does not keep what Backward reads: Backward after it
// is refused instead of reading overwritten outputs.
func TestBackwardAfterInferenceForwardPanics(t *testing.T) {
	b := cpu.NewCPU()
	net, err := NewNet(b, Shape{C: 3, H: 1, W: 1}, []Node{{Layer: NewLinear("a", 4)}, {Layer: NewReLU("r")}, {Layer: NewLinear("b", 2)}})
	if err != nil {
		t.Fatal(err)
	}
	x, dy := b.Alloc(2*3), b.Alloc(2*2)
	net.Forward(x, 2, true)
	net.Backward(dy) // fine
	net.Forward(x, 2, false)
	defer func() {
		if recover() == nil {
			t.Error("Backward after an inference Forward did not panic")
		}
	}()
	net.Backward(dy)
}
