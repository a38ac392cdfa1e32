package solver

import (
	"math"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestActivationGrads checks every activation kind and the softmax layer
// against finite differences (the inputs avoid the kinks: see gradcheck_test.go).
func TestActivationGrads(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6, gpu.Sigmoid, gpu.Tanh, gpu.HardSwish, gpu.SiLU, gpu.HardSigmoid(1.0/6, 0.5),
		gpu.HardSigmoid(0.2, 0.5), gpu.LeakyReLU(0.01), gpu.LeakyReLU(-0.3), gpu.Clip(-1, 2), gpu.Clip(-inf, 0.5),
		gpu.Clip(-0.5, inf)} {
		t.Run(a.String(), func(t *testing.T) {
			checkGrads(t, NewActivation("act", a), Shape{3, 4, 4}, 2, 1e-2)
		})
	}
	for _, sm := range []struct {
		dims        []int
		first, last int
		in          Shape
	}{
		{nil, 0, 0, Shape{5, 3, 3}}, {nil, 0, 0, Shape{10, 1, 1}}, {nil, 1, 1, Shape{3, 4, 5}}, {nil, 2, 2, Shape{2, 3, 4}},
		{nil, 0, 2, Shape{3, 2, 2}}, {nil, 1, 2, Shape{2, 3, 3}},
		{[]int{2, 3, 2, 2}, 1, 1, Shape{6, 2, 2}}, // a grouped view of the channels
		{[]int{12}, 0, 0, Shape{3, 2, 2}},         // a flattened image
	} {
		checkGrads(t, NewSoftmax("softmax", sm.dims, sm.first, sm.last), sm.in, 2, 1e-2)
	}
}

// TestActivationNetGrads checks the activations inside a network against
// finite differences. The first layer is a 1×1 convolution of one channel,
// whose outputs stay within ±1.4 (|w·x + b| with parameters in ±1 and
// inputs in ±0.4), so perturbing a parameter never crosses HardSwish's
// kinks at ±3; the later kinds are smooth.
func TestActivationNetGrads(t *testing.T) {
	n, err := NewNet(cpu.NewCPU(), Shape{1, 4, 4}, chain(
		NewConv2D("c1", ConvConfig{Out: 3, KH: 1}),
		NewActivation("hs", gpu.HardSwish),
		NewConv2D("c2", ConvConfig{Out: 3, KH: 3, PadH: 1, PadW: 1}),
		NewActivation("sig", gpu.Sigmoid),
		NewSoftmax("sm", nil, 0, 0),
		NewActivation("tanh", gpu.Tanh),
		NewLinear("fc", 2),
	))
	if err != nil {
		t.Fatal(err)
	}
	// The floor makes gradients under 1e-2 compare absolutely: the central
	// difference's own error (float32 rounding of the loss over 2·Eps, and
	// its truncation through the sigmoid and softmax) reaches ~1e-4 here, as
	// measured; each layer's gradient is also checked alone above and
	// against PyTorch (golden_test.go).
	bad, err := gradCheck{Floor: 1e-2, Tol: 1e-2}.net(n, 2)
	report(t, "net", bad, err)
}

// TestActivationSharing runs every kind inside a network whose plan keeps
// only what each Backward reads (HardSwish and a negative-slope LeakyReLU
// their input, the others their output) and compares a few training steps
// bit for bit with the same network without buffer sharing: a Backward
// reading a tensor the plan let another overwrite would differ.
func TestActivationSharing(t *testing.T) {
	build := func(share bool) *Net {
		var ls []Layer
		for i, a := range []gpu.Act{gpu.HardSwish, gpu.SiLU, gpu.LeakyReLU(-0.2), gpu.Sigmoid, gpu.HardSigmoid(1.0/6, 0.5), gpu.Tanh,
			gpu.Clip(-0.5, 0.5), gpu.LeakyReLU(0.1), gpu.ReLU6} {
			ls = append(ls, NewConv2D("c"+a.String()+string(rune('a'+i)), ConvConfig{Out: 4, KH: 3, PadH: 1, PadW: 1}),
				NewActivation(a.String()+string(rune('a'+i)), a))
		}
		ls = append(ls, NewSoftmax("sm", nil, 0, 0), NewLinear("fc", 3))
		n, err := NewNet(cpu.NewCPU(), Shape{2, 5, 5}, chain(ls...))
		if err != nil {
			t.Fatal(err)
		}
		n.SetSharing(share)
		return n
	}
	got, want := runSteps(build(true), 3), runSteps(build(false), 3)
	if d := got.diff(want); d != "" {
		t.Fatalf("shared and unshared %s differ", d)
	}
}

// TestActivationSetupErrors checks that invalid parameters and softmax axes
// are refused at Setup with the layer named.
func TestActivationSetupErrors(t *testing.T) {
	for _, l := range []Layer{
		NewActivation("bad_clip", gpu.Clip(3, 1)),
		NewActivation("bad_leaky", gpu.LeakyReLU(float32(math.NaN()))),
		NewActivation("bad_kind", gpu.Act{}),
		NewSoftmax("bad_axes", nil, 2, 1),
		NewSoftmax("bad_negative", nil, -1, 1),
		NewSoftmax("bad_axis3", nil, 1, 3),
		NewSoftmax("bad_dims", []int{5, 5}, 0, 0),
	} {
		_, err := l.Setup([]Shape{{3, 4, 4}})
		if err == nil || !strings.Contains(err.Error(), l.Name()) {
			t.Errorf("%s: Setup error %v, want one naming the layer", l.Name(), err)
		}
	}
}

// chain lists layers as nodes, each reading the previous one.
func chain(ls ...Layer) []Node {
	ns := make([]Node, len(ls))
	for i, l := range ls {
		ns[i] = Node{Layer: l}
	}
	return ns
}
