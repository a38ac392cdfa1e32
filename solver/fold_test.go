package solver_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// foldBlocks are the convolution, batch norm and activation blocks whose
// folding TestFoldedMatchesUnfolded bounds: a 3×3 convolution with bias
// (the CPU's Winograd path) and ReLU, a strided one without bias and
// ReLU6, a pointwise one with no activation (a projection, or ResNet's
// second batch norm before its sum), and a depthwise one with hard-swish
// (not fused: it runs its own pass on the folded output).
var foldBlocks = []struct {
	name string
	cfg  solver.ConvConfig
	act  *gpu.Act // nil: none
	lip  float64  // the activation's Lipschitz constant
}{
	{"conv3x3-bias-relu", solver.ConvConfig{Out: 8, KH: 3, PadH: 1, PadW: 1}, &gpu.ReLU, 1},
	{"strided-nobias-relu6", solver.ConvConfig{Out: 8, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, NoBias: true}, &gpu.ReLU6, 1},
	{"pointwise", solver.ConvConfig{Out: 12, KH: 1, NoBias: true}, nil, 1},
	{"depthwise-hardswish", solver.ConvConfig{Out: 6, KH: 3, PadH: 1, PadW: 1, Groups: 6}, &gpu.HardSwish, 1.5},
}

// foldIn is the blocks' per-sample input, foldBatch their batch.
var foldIn = solver.Shape{C: 6, H: 9, W: 9}

const foldBatch = 3

// foldBlockNet builds block k as a network of its own, every layer frozen
// (the whole network is then the frozen prefix), with random weights and
// random batch-norm parameters and statistics, and returns it with an input.
func foldBlockNet(t *testing.T, b gpu.Backend, k int) (*solver.Net, []float32) {
	t.Helper()
	blk := foldBlocks[k]
	nodes := []solver.Node{{Layer: solver.NewConv2D("conv", blk.cfg)}, {Layer: solver.NewBatchNorm("bn", 0, 0)}}
	if blk.act != nil {
		nodes = append(nodes, solver.Node{Layer: solver.NewActivation("act", *blk.act)})
	}
	net, err := solver.NewNet(b, foldIn, nodes)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, uint64(k)))
	net.InitParams(r)
	randomBatchNorm(net, r)
	net.FreezeAllButLast(0)
	x := make([]float32, foldBatch*foldIn.Size())
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return net, x
}

// randomBatchNorm gives every batch norm of net random parameters and
// running statistics: γ of either sign in [0.5, 1.5], β and μ in [-1, 1],
// σ² in [0.05, 2] (a small variance makes a large scale, as trained
// networks have), and tells the net (ParamsChanged).
func randomBatchNorm(net *solver.Net, r *rand.Rand) {
	params := download(net.B, net.Params)
	state := download(net.B, net.State)
	for _, tn := range net.Tensors() {
		v := params[tn.Off : tn.Off+tn.Spec.Size()]
		switch tn.Spec.Init {
		case solver.InitOnes: // batch norm's weight
			for i := range v {
				v[i] = (0.5 + r.Float32()) * float32(1-2*(i%2))
			}
		case solver.InitZeros: // its bias
			for i := range v {
				v[i] = 2*r.Float32() - 1
			}
		}
	}
	for _, tn := range net.StateTensors() {
		v := state[tn.Off : tn.Off+tn.Spec.Size()]
		for i := range v {
			if tn.Spec.Init == solver.InitOnes { // running_var
				v[i] = 0.05 + 1.95*r.Float32()
			} else {
				v[i] = 2*r.Float32() - 1
			}
		}
	}
	net.B.Upload(net.Params, params)
	net.B.Upload(net.State, state)
	net.ParamsChanged()
}

// foldBound returns, for every output of block net on x, the bound on
// |folded − unfolded| that float32 rounding allows (u = 2⁻²⁴):
//
//	lip·2(k+4)·u·M + 4u·|y|,   M = |s|·(Σ|w||x| + |b| + |μ|) + |β|
//
// with s = γ/√(σ²+ε) and k the filter's fan-in. Exactly, both sides are
// s·(Σwx + b − μ) + β. Unfolded, the sum Σwx rounds with an error of at
// most γ_k·Σ|w||x| (Higham's bound, γ_k = ku/(1−ku)), then the batch norm's
// three operations add a relative u each; folded, each product w·s·x
// carries the rounding of w·s besides the sum's, and b' one of its own.
// Each side is thus within (k+4)u·M of the exact value, so they are within
// 2(k+4)u·M of each other. The GEMM's blocked sums only reorder the sum,
// which the bound allows; the CPU's Winograd F(2×2,3×3) passes it through
// transforms, which the bound does not cover in theory, but both sides go
// through the same transforms and the differences measured stay under a
// fifth of it (the test logs the largest fraction). The activation multiplies a
// difference of its inputs by at most its Lipschitz constant lip (1 for
// ReLU and ReLU6, 1.5 for hard-swish), and rounds its own result on each
// side (the 4u·|y|).
func foldBound(t *testing.T, net *solver.Net, blk int, x, y []float32) []float64 {
	t.Helper()
	cfg := foldBlocks[blk].cfg
	params := download(net.B, net.Params)
	state := download(net.B, net.State)
	tens := map[string][]float32{}
	for _, tn := range net.Tensors() {
		tens[tn.Name] = params[tn.Off : tn.Off+tn.Spec.Size()]
	}
	for _, tn := range net.StateTensors() {
		tens[tn.Name] = state[tn.Off : tn.Off+tn.Spec.Size()]
	}
	w, gamma, beta := tens["conv.weight"], tens["bn.weight"], tens["bn.bias"]
	mean, variance := tens["bn.running_mean"], tens["bn.running_var"]
	bias := tens["conv.bias"] // nil without one
	c, h, wd := foldIn.C, foldIn.H, foldIn.W
	sh, sw := max(cfg.StrideH, 1), max(cfg.StrideW, 1)
	kw := max(cfg.KW, cfg.KH)
	oh, ow := (h+2*cfg.PadH-cfg.KH)/sh+1, (wd+2*cfg.PadW-kw)/sw+1
	groups := max(cfg.Groups, 1)
	cg, kg := c/groups, cfg.Out/groups
	fan := cg * cfg.KH * kw
	const u = 1.0 / (1 << 24)
	bound := make([]float64, len(y))
	for n := range foldBatch {
		for k := range cfg.Out {
			s := float64(gamma[k]) / math.Sqrt(float64(variance[k])+solver.DefaultBNEps)
			g := k / kg
			for oy := range oh {
				for ox := range ow {
					var sum float64 // Σ|w||x|
					for ci := range cg {
						for r := range cfg.KH {
							for q := range kw {
								iy, ix := oy*sh-cfg.PadH+r, ox*sw-cfg.PadW+q
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								xv := x[((n*c+g*cg+ci)*h+iy)*wd+ix]
								sum += math.Abs(float64(w[((k*cg+ci)*cfg.KH+r)*kw+q]) * float64(xv))
							}
						}
					}
					m := math.Abs(float64(mean[k]))
					if bias != nil {
						m += math.Abs(float64(bias[k]))
					}
					m = math.Abs(s)*(sum+m) + math.Abs(float64(beta[k]))
					i := ((n*cfg.Out+k)*oh+oy)*ow + ox
					bound[i] = foldBlocks[blk].lip*2*float64(fan+4)*u*m + 4*u*math.Abs(float64(y[i]))
				}
			}
		}
	}
	return bound
}

// TestFoldedMatchesUnfolded: each block of foldBlocks, frozen, gives within
// foldBound of its unfolded output (SetFolding(false)), in a training
// Forward (the frozen prefix run as inference) and an inference one, and
// the folded plan calls the batch norm's kernel only to fold (once, until
// something changes) and shares fewer buffers.
func TestFoldedMatchesUnfolded(t *testing.T) {
	for k, blk := range foldBlocks {
		t.Run(blk.name, func(t *testing.T) {
			be := &bnCounter{CPU: cpu.NewCPU()}
			checkFoldBlock(t, be, k, func(train bool, folded bool) {
				switch {
				case folded && be.calls != 2: // the weights and the bias, folded once
					t.Errorf("train %v: %d batch-norm kernel calls in two folded Forwards, want 2 (the fold)", train, be.calls)
				case !folded && be.calls != 1:
					t.Errorf("train %v: %d batch-norm kernel calls unfolded, want 1", train, be.calls)
				}
				be.calls = 0
			})
		})
	}
}

// checkFoldBlock runs block k of foldBlocks on b, folded (two Forwards) and
// unfolded (one), in training and inference Forwards, calling after(train,
// folded) after each, and checks that the outputs are within foldBound of
// each other and that folding shares fewer buffers where the activation is
// fused. It logs the largest |difference| as a fraction of its bound.
func checkFoldBlock(t *testing.T, b gpu.Backend, k int, after func(train, folded bool)) {
	t.Helper()
	blk := foldBlocks[k]
	net, x := foldBlockNet(t, b, k)
	if net.FoldedSize() == 0 {
		t.Fatal("nothing folded")
	}
	xb := net.B.Alloc(len(x))
	net.B.Upload(xb, x)
	worst := 0.0
	for _, train := range []bool{true, false} {
		folded := download(b, net.Forward(xb, foldBatch, train))
		net.Forward(xb, foldBatch, train)
		after(train, true)
		net.SetFolding(false)
		plain := download(b, net.Forward(xb, foldBatch, train))
		after(train, false)
		bound := foldBound(t, net, k, x, plain)
		for i := range plain {
			d := math.Abs(float64(folded[i]) - float64(plain[i]))
			worst = max(worst, d/bound[i])
			if !(d <= bound[i]) {
				t.Fatalf("train %v: output %d: folded %v, unfolded %v: |difference| %.3g > bound %.3g", train, i, folded[i], plain[i], d, bound[i])
			}
		}
		unfolded := net.Buffers(foldBatch)
		net.SetFolding(true)
		// A hard-swish runs its own pass, reading the folded output
		// into a second buffer, as it read the batch norm's.
		fusedAct := blk.act == nil || gpu.FusesAct(*blk.act)
		if f := net.Buffers(foldBatch); fusedAct && !(f.Inference < unfolded.Inference) {
			t.Errorf("inference buffers %d folded, %d unfolded: want fewer", f.Inference, unfolded.Inference)
		}
	}
	t.Logf("largest |difference| %.3g of its bound", worst)
}

// bnCounter is the CPU backend counting its BatchNormInfer calls.
type bnCounter struct {
	*cpu.CPU
	calls int
}

func (c *bnCounter) BatchNormInfer(g gpu.BNGeom, y, x, gamma, beta, runMean, runVar gpu.Buffer) {
	c.calls++
	c.CPU.BatchNormInfer(g, y, x, gamma, beta, runMean, runVar)
}

// TestFoldFollowsChanges: the folded weights follow the parameters and the
// statistics once the net is told (ParamsChanged), and are stale until
// then (the contract); a layer that learns again is not folded, and its
// batch norm runs in training mode again.
func TestFoldFollowsChanges(t *testing.T) {
	net, x := foldBlockNet(t, cpu.NewCPU(), 0)
	xb := net.B.Alloc(len(x))
	net.B.Upload(xb, x)
	before := download(net.B, net.Forward(xb, foldBatch, true))
	state := download(net.B, net.State)
	for i := range state {
		state[i] *= 1.5
	}
	net.B.Upload(net.State, state)
	if got := download(net.B, net.Forward(xb, foldBatch, true)); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Error("the folded output changed before ParamsChanged: the contract says it is stale")
	}
	net.ParamsChanged()
	folded := download(net.B, net.Forward(xb, foldBatch, true))
	net.SetFolding(false)
	plain := download(net.B, net.Forward(xb, foldBatch, true))
	bound := foldBound(t, net, 0, x, plain)
	for i := range plain {
		if d := math.Abs(float64(folded[i]) - float64(plain[i])); !(d <= bound[i]) {
			t.Fatalf("after ParamsChanged: output %d folded %v, unfolded %v", i, folded[i], plain[i])
		}
	}
	net.SetFolding(true)
	net.Unfreeze()
	if n := net.FoldedSize(); n != 0 {
		t.Errorf("every layer learns, yet %d folded elements", n)
	}
	// Training mode: the batch's own statistics, not the running ones.
	if got := download(net.B, net.Forward(xb, foldBatch, true)); fmt.Sprint(got) == fmt.Sprint(folded) {
		t.Error("unfrozen, the training Forward still gives the folded output")
	}
}

// foldGraph builds node lists with named convolution, batch norm and
// activation blocks, wiring inputs by index.
type foldGraph struct{ nodes []solver.Node }

// add appends l reading the given nodes (none: the previous one) and
// returns its index.
func (g *foldGraph) add(l solver.Layer, in ...int) int {
	g.nodes = append(g.nodes, solver.Node{Layer: l, Inputs: in})
	return len(g.nodes) - 1
}

// block appends conv → batch norm → act (nil: none) reading in and
// returns the last node's index.
func (g *foldGraph) block(name string, cfg solver.ConvConfig, act *gpu.Act, in int) int {
	i := g.add(solver.NewConv2D(name, cfg), in)
	i = g.add(solver.NewBatchNorm(name+"_bn", 0, 0), i)
	if act != nil {
		i = g.add(solver.NewActivation(name+"_act", *act), i)
	}
	return i
}

// head appends global pooling, flatten and a linear classifier of 5
// classes reading in.
func (g *foldGraph) head(in int) []solver.Node {
	i := g.add(solver.NewGlobalAvgPool("pool"), in)
	i = g.add(solver.NewFlatten("flat"), i)
	g.add(solver.NewLinear("fc", 5), i)
	return g.nodes
}

// resnetNodes is a small ResNet: a stem, a basic block with an identity
// shortcut and one that halves the size with a 1×1 convolution and batch
// norm on the shortcut, as torchvision's resnet18 has them.
func resnetNodes() []solver.Node {
	var g foldGraph
	c3 := func(out, stride int, bias bool) solver.ConvConfig {
		return solver.ConvConfig{Out: out, KH: 3, StrideH: stride, StrideW: stride, PadH: 1, PadW: 1, NoBias: !bias}
	}
	x := g.block("stem", c3(8, 1, true), &gpu.ReLU, solver.Input)
	y := g.block("b1c1", c3(8, 1, false), &gpu.ReLU, x)
	y = g.block("b1c2", c3(8, 1, false), nil, y)
	x = g.add(solver.NewReLU("b1_out"), g.add(solver.NewAdd("b1_add"), x, y))
	y = g.block("b2c1", c3(16, 2, false), &gpu.ReLU, x)
	y = g.block("b2c2", c3(16, 1, false), nil, y)
	s := g.block("b2ds", solver.ConvConfig{Out: 16, KH: 1, StrideH: 2, StrideW: 2, NoBias: true}, nil, x)
	x = g.add(solver.NewReLU("b2_out"), g.add(solver.NewAdd("b2_add"), s, y))
	return g.head(x)
}

// mobilenetV2Nodes is a small MobileNet v2: a stem, an inverted residual
// block with its shortcut (1×1 expansion, depthwise 3×3, both with ReLU6,
// and a linear 1×1 projection), a strided one without, and the last 1×1
// convolution.
func mobilenetV2Nodes() []solver.Node {
	var g foldGraph
	x := g.block("stem", solver.ConvConfig{Out: 8, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, NoBias: true}, &gpu.ReLU6, solver.Input)
	inverted := func(name string, in, out, stride int) int {
		y := g.block(name+"_expand", solver.ConvConfig{Out: 6 * 8, KH: 1, NoBias: true}, &gpu.ReLU6, in)
		y = g.block(name+"_dw", solver.ConvConfig{Out: 6 * 8, KH: 3, StrideH: stride, StrideW: stride, PadH: 1, PadW: 1, Groups: 6 * 8, NoBias: true}, &gpu.ReLU6, y)
		return g.block(name+"_project", solver.ConvConfig{Out: out, KH: 1, NoBias: true}, nil, y)
	}
	x = g.add(solver.NewAdd("ir1_add"), x, inverted("ir1", x, 8, 1))
	x = inverted("ir2", x, 12, 2)
	x = g.block("last", solver.ConvConfig{Out: 32, KH: 1, NoBias: true}, &gpu.ReLU6, x)
	return g.head(x)
}

// fineTune runs steps SGD steps of net, every layer but the last frozen,
// on one seeded batch of 8 samples, and returns the losses and the
// parameters and statistics after them (downloaded).
func fineTune(t *testing.T, net *solver.Net, steps int) (losses []float64, params, state []float32) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	net.FreezeAllButLast(1)
	tr := solver.NewTrainer(net, solver.NewSGD(net.B, net.NumParams(), 0.9, 0, false), solver.Constant(0.1))
	const batch = 8
	x := make([]float32, batch*net.In.Size())
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(i % net.Out.Size())
	}
	for range steps {
		loss, err := tr.Step(x, labels)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss)
	}
	return losses, download(net.B, net.Params), download(net.B, net.State)
}

// foldNets are the networks of the fine-tuning tests.
var foldNets = []struct {
	name  string
	nodes func() []solver.Node
}{{"resnet", resnetNodes}, {"mobilenet-v2", mobilenetV2Nodes}}

// checkFoldedFineTune fine-tunes the last layer of net (built by build,
// with random weights and batch-norm statistics) folded, again folded, and
// unfolded: the two folded runs end with the same weights bit for bit, the
// frozen parameters and the statistics are those before the fine-tune bit
// for bit (nothing writes them), and the losses of the folded run are the
// unfolded run's within a relative tol.
func checkFoldedFineTune(t *testing.T, build func() *solver.Net, tol float64) {
	t.Helper()
	run := func(fold bool) ([]float64, []float32, []float32, *solver.Net, []float32, []float32) {
		net := build()
		r := rand.New(rand.NewPCG(7, 8))
		net.InitParams(r)
		randomBatchNorm(net, r)
		net.SetFolding(fold)
		p0, s0 := download(net.B, net.Params), download(net.B, net.State)
		losses, p, s := fineTune(t, net, 6)
		return losses, p, s, net, p0, s0
	}
	l1, p1, s1, net, p0, s0 := run(true)
	if net.FoldedSize() == 0 {
		t.Fatal("nothing folded")
	}
	l2, p2, s2, _, _, _ := run(true)
	if fmt.Sprint(l1) != fmt.Sprint(l2) || !sameBits(p1, p2) || !sameBits(s1, s2) {
		t.Errorf("two folded runs differ: losses %v and %v", l1, l2)
	}
	trained := map[int]bool{}
	for _, rg := range net.Trainable() {
		for i := rg.Off; i < rg.Off+rg.Len; i++ {
			trained[i] = true
		}
	}
	for i := range p0 {
		if !trained[i] && math.Float32bits(p0[i]) != math.Float32bits(p1[i]) {
			t.Fatalf("frozen parameter %d changed: %v, then %v", i, p0[i], p1[i])
		}
	}
	if !sameBits(s0, s1) {
		t.Error("the batch-norm statistics changed in the fine-tune")
	}
	lu, _, _, _, _, _ := run(false)
	worst := 0.0
	for i := range lu {
		worst = max(worst, math.Abs(l1[i]-lu[i])/math.Abs(lu[i]))
	}
	if !(worst <= tol) {
		t.Errorf("losses folded %v, unfolded %v: relative difference %.3g > %.3g", l1, lu, worst, tol)
	}
	t.Logf("losses %.6f ... %.6f; folded against unfolded: relative %.3g; %d of %d parameters learn, %d folded elements",
		l1[0], l1[len(l1)-1], worst, net.NumTrainable(), net.NumParams(), net.FoldedSize())
}

// sameBits reports whether a and b hold the same float32 bits.
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

// TestFoldedFineTune: checkFoldedFineTune on the CPU for a small ResNet and
// a small MobileNet v2. The tolerance: the frozen prefix's outputs differ
// from the unfolded ones by float32 rounding, a few units in the last
// place per layer (TestFoldedMatchesUnfolded), so over its dozen layers the
// features, and through the linear head the loss, differ by about 1e-6
// relative; 1e-5 leaves room, and is far below the loss's change over the
// steps.
func TestFoldedFineTune(t *testing.T) {
	for _, m := range foldNets {
		t.Run(m.name, func(t *testing.T) {
			checkFoldedFineTune(t, func() *solver.Net {
				net, err := solver.NewNet(cpu.NewCPU(), solver.Shape{C: 3, H: 16, W: 16}, m.nodes())
				if err != nil {
					t.Fatal(err)
				}
				return net
			}, 1e-5)
		})
	}
}

// TestSetStateKeepsFold: SetState with the frozen batch norms' statistics
// unchanged (what a worker uploads every iteration) keeps the folded
// weights, with one of them changed refolds, and the first call, with no
// copy to compare with, refolds too.
func TestSetStateKeepsFold(t *testing.T) {
	be := &bnCounter{CPU: cpu.NewCPU()}
	net, err := solver.NewNet(be, solver.Shape{C: 3, H: 16, W: 16}, resnetNodes())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	net.InitParams(r)
	randomBatchNorm(net, r)
	net.FreezeAllButLast(1)
	x := be.Alloc(2 * net.In.Size())
	state := download(be, net.State)
	folds := 0
	for _, c := range []struct {
		name   string
		change bool
		want   func() int
	}{
		{"first", false, func() int { return folds }},
		{"same", false, func() int { return 0 }},
		{"changed", true, func() int { return folds }},
	} {
		if c.change {
			state[len(state)/2] *= 1.25
		}
		net.SetState(state)
		be.calls = 0
		net.Forward(x, 2, true)
		if folds == 0 {
			folds = be.calls // the first Forward's: every pair folded
		}
		if got := be.calls; folds == 0 || got != c.want() {
			t.Errorf("%s: %d batch-norm kernel calls, want %d", c.name, got, c.want())
		}
	}
}
