package solver_test

import (
	"fmt"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// fuseNodes is a small AlexNet-like network with every case of fusing: a
// strided convolution with ReLU, one with ReLU6, one without bias, a
// depthwise one, a convolution whose output fans out (not fused), a linear
// layer with ReLU, one without bias, a sigmoid (not fused), and a ReLU
// that is the network's output.
func fuseNodes() []solver.Node {
	conv := func(name string, cfg solver.ConvConfig) *solver.Conv2D { return solver.NewConv2D(name, cfg) }
	fc := solver.NewLinear("fc_nobias", 12)
	fc.NoBias = true
	return []solver.Node{
		{Layer: conv("c1", solver.ConvConfig{Out: 8, KH: 5, StrideH: 2, StrideW: 2, PadH: 2, PadW: 2})}, // 0: 8x9x9
		{Layer: solver.NewReLU("r1")},
		{Layer: solver.NewMaxPool2D("p1", solver.PoolConfig{KH: 3, StrideH: 2})},               // 2: 8x4x4
		{Layer: conv("c2", solver.ConvConfig{Out: 12, KH: 3, PadH: 1, PadW: 1})},               // 3
		{Layer: solver.NewReLU6("r2")},                                                         // 4
		{Layer: conv("c3", solver.ConvConfig{Out: 12, KH: 3, PadH: 1, PadW: 1, NoBias: true})}, // 5
		{Layer: solver.NewReLU("r3")},                                                          // 6
		{Layer: conv("dw", solver.ConvConfig{Out: 12, KH: 3, PadH: 1, PadW: 1, Groups: 12})},   // 7
		{Layer: solver.NewReLU6("r4")},                                                         // 8
		{Layer: conv("fan", solver.ConvConfig{Out: 12, KH: 1})},                                // 9: read by 10 and 11
		{Layer: solver.NewReLU("r5")},                                                          // 10
		{Layer: solver.NewAdd("add"), Inputs: []int{9, 10}},                                    // 11
		{Layer: solver.NewFlatten("flat")},
		{Layer: solver.NewLinear("fc1", 16)},
		{Layer: solver.NewReLU("r6")},
		{Layer: solver.NewDropout("drop", 0.3)},
		{Layer: fc},
		{Layer: solver.NewReLU6("r7")},
		{Layer: solver.NewLinear("fc2", 10)},
		{Layer: solver.NewActivation("sig", gpu.Sigmoid)},
		{Layer: solver.NewLinear("fc3", 6)},
		{Layer: solver.NewReLU("out")}, // the network's output
	}
}

// fusedPairs is the number of activations that fuseNodes fuses: r1, r2,
// r3, r4, r6, r7 and out.
const fusedPairs = 7

// countingBackend is the CPU backend with a gpu.ActFuser that counts its
// calls and runs them unfused, and counts the separate calls that fusing
// replaces.
type countingBackend struct {
	*cpu.CPU
	fused, act, actBack, bias, biasGrad int
}

func (c *countingBackend) ConvForwardAct(a gpu.Act, g gpu.ConvGeom, y, x, w, bias, ws, cols gpu.Buffer) {
	c.fused++
	gpu.Unfused(c.CPU).ConvForwardAct(a, g, y, x, w, bias, ws, cols)
}

func (c *countingBackend) BiasAct(a gpu.Act, x, bias gpu.Buffer, n, ch, hw int) {
	c.fused++
	gpu.Unfused(c.CPU).BiasAct(a, x, bias, n, ch, hw)
}

func (c *countingBackend) LinearForwardAct(a gpu.Act, y, x, w, bias gpu.Buffer, n, in, out int) {
	c.fused++
	gpu.Unfused(c.CPU).LinearForwardAct(a, y, x, w, bias, n, in, out)
}

func (c *countingBackend) ActivateBackwardBias(a gpu.Act, dx, dbias, dy, y gpu.Buffer, n, ch, hw int) {
	c.fused++
	gpu.Unfused(c.CPU).ActivateBackwardBias(a, dx, dbias, dy, y, n, ch, hw)
}

func (c *countingBackend) Activate(a gpu.Act, y, x gpu.Buffer) {
	c.act++
	c.CPU.Activate(a, y, x)
}

func (c *countingBackend) ActivateBackward(a gpu.Act, dx, dy, t gpu.Buffer) {
	c.actBack++
	c.CPU.ActivateBackward(a, dx, dy, t)
}

func (c *countingBackend) AddBias(x, bias gpu.Buffer, n, ch, hw int) {
	c.bias++
	c.CPU.AddBias(x, bias, n, ch, hw)
}

func (c *countingBackend) BiasGrad(dbias, dy gpu.Buffer, n, ch, hw int) {
	c.biasGrad++
	c.CPU.BiasGrad(dbias, dy, n, ch, hw)
}

var _ gpu.ActFuser = (*countingBackend)(nil)

// fuseRuns trains the network that build makes on b, fused and unfused,
// with the layers from freeze frozen ("" none; "last2": all but the last
// two), and fails on any difference in gradients, weights, state or
// logits.
func fuseRuns(t *testing.T, name string, b gpu.Backend, build func(gpu.Backend) (*solver.Net, error), freeze string) {
	t.Helper()
	var runs [2][][]float32
	for i, on := range []bool{true, false} {
		n, err := build(b)
		if err != nil {
			t.Fatal(err)
		}
		n.SetFusing(on)
		switch freeze {
		case "":
		case "last2":
			n.FreezeAllButLast(2)
		default:
			if err := n.Freeze(freeze); err != nil {
				t.Fatal(err)
			}
		}
		runs[i] = stepsFingerprint(t, n)
	}
	sameFingerprint(t, fmt.Sprintf("%s, frozen %q", name, freeze), runs[0], runs[1], "fused", "unfused")
}

// Fused and unfused networks train to the same bits on the CPU (through
// gpu.Unfused) and through a backend with its own ActFuser, with every
// layer learning, the last two only, a fused producer frozen below learning
// layers, and a fused convolution frozen as the lowest layer; on a
// column-keeping backend too.
func TestFusedMatchesUnfused(t *testing.T) {
	fuseNet := func(b gpu.Backend) (*solver.Net, error) {
		return solver.NewNet(b, solver.Shape{C: 3, H: 17, W: 17}, fuseNodes())
	}
	alexnet := func(b gpu.Backend) (*solver.Net, error) {
		return models.Build(b, "alexnet-small", models.Config{})
	}
	for _, freeze := range []string{"", "last2", "c2", "c1", "fc1"} {
		fuseRuns(t, "fuse", cpu.NewCPU(), fuseNet, freeze)
		fuseRuns(t, "fuse, counting", &countingBackend{CPU: cpu.NewCPU()}, fuseNet, freeze)
		fuseRuns(t, "fuse, keeping columns", &copyKeeper{CPU: cpu.NewCPU(), grant: 1 << 30}, fuseNet, freeze)
	}
	fuseRuns(t, "alexnet-small", cpu.NewCPU(), alexnet, "")
	fuseRuns(t, "residual", cpu.NewCPU(), func(b gpu.Backend) (*solver.Net, error) {
		return solver.NewNet(b, solver.Shape{C: 3, H: 8, W: 8}, residualNodes())
	}, "")
}

// A fused step makes no separate bias or activation calls for the fused
// pairs: per step, each runs one fused call forward and, while its
// producer learns and has a bias, one backward; the unfused network makes
// none. The shared buffers of the fused plan are smaller.
func TestFusingReplacesCalls(t *testing.T) {
	for _, on := range []bool{true, false} {
		c := &countingBackend{CPU: cpu.NewCPU()}
		n, err := solver.NewNet(c, solver.Shape{C: 3, H: 17, W: 17}, fuseNodes())
		if err != nil {
			t.Fatal(err)
		}
		n.SetFusing(on)
		stepsFingerprint(t, n)
		// stepsFingerprint: 3 steps and 3 evaluations, then one gradient:
		// 7 forward passes, 4 backward ones.
		const fwd, bwd = 7, 4
		// Nine activations, seven of them fused (r5's producer fans out,
		// sig is no ReLU); the backend's own calls are counted, not the
		// CPU's inside its convolutions: AddBias and BiasGrad of fc1, fc2,
		// fc3. Fused, those of fc1 and fc3 go to their ReLUs, and five
		// fused activations have a learning producer with a bias (r1, r2,
		// r4, r6, out; not r3 and r7).
		got := fmt.Sprintf("fused %d, Activate %d, ActivateBackward %d, AddBias %d, BiasGrad %d",
			c.fused, c.act, c.actBack, c.bias, c.biasGrad)
		want := fmt.Sprintf("fused %d, Activate %d, ActivateBackward %d, AddBias %d, BiasGrad %d",
			fusedPairs*fwd+5*bwd, 2*fwd, 4*bwd, 1*fwd, 1*bwd)
		if !on {
			want = fmt.Sprintf("fused 0, Activate %d, ActivateBackward %d, AddBias %d, BiasGrad %d", 9*fwd, 9*bwd, 3*fwd, 3*bwd)
		}
		if got != want {
			t.Errorf("fusing %v: %s calls, want %s", on, got, want)
		}
	}
	var use [2]solver.BufferUse
	for i, on := range []bool{true, false} {
		n, err := solver.NewNet(cpu.NewCPU(), solver.Shape{C: 3, H: 17, W: 17}, fuseNodes())
		if err != nil {
			t.Fatal(err)
		}
		n.SetFusing(on)
		use[i] = n.Buffers(4)
	}
	if use[0].Training >= use[1].Training || use[0].Inference > use[1].Inference {
		t.Errorf("fused buffers %+v, unfused %+v: want smaller training buffers, no larger inference ones", use[0], use[1])
	}
}

// The model zoo's ReLUs after convolutions and linear layers are fused:
// all seven of AlexNet's, LeNet-5's four; MobileNet's ReLU6s follow batch
// norms and are not.
func TestModelsFuse(t *testing.T) {
	for _, c := range []struct {
		model string
		cfg   models.Config
		fused int
		act   int // activations left
	}{
		{"alexnet", models.Config{}, 7, 0},
		{"alexnet-small", models.Config{}, 7, 0},
		{"lenet5", models.Config{}, 4, 0},
		{"lenet-caffe", models.Config{}, 1, 0},
		{"mobilenet-v1", models.Config{Width: 0.25}, 0, 27},
	} {
		b := &countingBackend{CPU: cpu.NewCPU()}
		n, err := models.Build(b, c.model, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		n.Forward(b.Alloc(n.In.Size()), 1, false)
		if b.fused != c.fused || b.act != c.act {
			t.Errorf("%s: a forward pass made %d fused calls and %d activations, want %d and %d", c.model, b.fused, b.act, c.fused, c.act)
		}
	}
}
