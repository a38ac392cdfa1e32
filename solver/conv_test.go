package solver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

func TestConv2DShapesAndParams(t *testing.T) {
	cases := []struct {
		cfg     ConvConfig
		in, out Shape
		weight  []int
		fanIn   int
	}{
		// lenet-caffe's conv1 and conv2.
		{ConvConfig{Out: 20, KH: 5}, Shape{1, 28, 28}, Shape{20, 24, 24}, []int{20, 1, 5, 5}, 25},
		{ConvConfig{Out: 50, KH: 5}, Shape{20, 12, 12}, Shape{50, 8, 8}, []int{50, 20, 5, 5}, 500},
		{ConvConfig{Out: 8, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, Shape{3, 7, 8}, Shape{8, 4, 4}, []int{8, 3, 3, 3}, 27},
		{ConvConfig{Out: 4, KH: 3, KW: 1, PadH: 1}, Shape{2, 5, 5}, Shape{4, 5, 5}, []int{4, 2, 3, 1}, 6},
		{ConvConfig{Out: 6, KH: 3, PadH: 1, PadW: 1, Groups: 2}, Shape{4, 6, 6}, Shape{6, 6, 6}, []int{6, 2, 3, 3}, 18},
		{ConvConfig{Out: 32, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 32, NoBias: true}, Shape{32, 15, 15}, Shape{32, 8, 8}, []int{32, 1, 3, 3}, 9},
		{ConvConfig{Out: 64, KH: 1, NoBias: true}, Shape{32, 7, 7}, Shape{64, 7, 7}, []int{64, 32, 1, 1}, 32},
	}
	for _, tc := range cases {
		l := NewConv2D("c", tc.cfg)
		out, err := l.Setup([]Shape{tc.in})
		if err != nil {
			t.Errorf("%+v on %v: %v", tc.cfg, tc.in, err)
			continue
		}
		if out != tc.out {
			t.Errorf("%+v on %v: output %v, want %v", tc.cfg, tc.in, out, tc.out)
		}
		want := []ParamSpec{{Name: "weight", Dims: tc.weight, Init: InitFanIn, FanIn: tc.fanIn}}
		if !tc.cfg.NoBias {
			want = append(want, ParamSpec{Name: "bias", Dims: []int{tc.out.C}, Init: InitFanIn, FanIn: tc.fanIn})
		}
		if got := l.Params(); !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: params %+v, want %+v", tc.cfg, got, want)
		}
		if l.Kind() != "conv2d" || l.State() != nil {
			t.Errorf("kind %q, state %v", l.Kind(), l.State())
		}
	}
}

func TestConv2DDefaults(t *testing.T) {
	l := NewConv2D("c", ConvConfig{Out: 4, KH: 3})
	want := ConvConfig{Out: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 1}
	if l.Cfg != want {
		t.Errorf("config %+v, want %+v", l.Cfg, want)
	}
}

func TestConv2DSetupErrors(t *testing.T) {
	cases := []struct {
		cfg  ConvConfig
		in   []Shape
		want string // in the message
	}{
		{ConvConfig{Out: 4, KH: 3, Groups: 2}, []Shape{{3, 8, 8}}, "input channels 3 not divisible by groups 2"},
		{ConvConfig{Out: 5, KH: 3, Groups: 2}, []Shape{{4, 8, 8}}, "output channels 5 not divisible by groups 2"},
		{ConvConfig{Out: 0, KH: 3}, []Shape{{1, 8, 8}}, "0 output channels"},
		{ConvConfig{Out: 2}, []Shape{{1, 8, 8}}, "kernel 0x0"},
		{ConvConfig{Out: 2, KH: 3, PadH: -1}, []Shape{{1, 8, 8}}, "padding -1x0"},
		{ConvConfig{Out: 2, KH: 3, StrideW: -2}, []Shape{{1, 8, 8}}, "stride 1x-2"},
		{ConvConfig{Out: 2, KH: 3, Groups: -1}, []Shape{{1, 8, 8}}, "-1 groups"},
		{ConvConfig{Out: 2, KH: 9}, []Shape{{1, 8, 8}}, "larger than padded input 8x8"},
		{ConvConfig{Out: 2, KH: 3}, []Shape{{1, 8, 8}, {1, 8, 8}}, "takes 1 input, got 2"},
	}
	for _, tc := range cases {
		_, err := NewConv2D("conv7", tc.cfg).Setup(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v on %v: error %v, want one containing %q", tc.cfg, tc.in, err, tc.want)
		}
	}
	_, err := NewConv2D("c", ConvConfig{Out: 2, KH: 9}).Setup([]Shape{{1, 8, 8}})
	if !errors.Is(err, gpu.ErrGeometry) {
		t.Errorf("kernel larger than input: %v does not wrap gpu.ErrGeometry", err)
	}
}

func TestConv2DGradients(t *testing.T) {
	cases := []struct {
		cfg ConvConfig
		in  Shape
	}{
		{ConvConfig{Out: 3, KH: 3}, Shape{2, 5, 5}},
		{ConvConfig{Out: 2, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, Shape{2, 6, 5}},
		{ConvConfig{Out: 3, KH: 2, KW: 3, StrideH: 1, StrideW: 2, PadH: 1, PadW: 2}, Shape{2, 4, 5}},
		{ConvConfig{Out: 4, KH: 3, PadH: 1, PadW: 1, Groups: 2}, Shape{4, 4, 4}},
		{ConvConfig{Out: 3, KH: 3, PadH: 1, PadW: 1, Groups: 3}, Shape{3, 5, 4}},                         // depthwise
		{ConvConfig{Out: 6, KH: 3, StrideH: 2, StrideW: 2, PadH: 2, PadW: 1, Groups: 3}, Shape{3, 5, 5}}, // multiplier 2
		{ConvConfig{Out: 4, KH: 1, NoBias: true}, Shape{3, 3, 4}},                                        // 1×1 fast path
		{ConvConfig{Out: 2, KH: 5, PadH: 2, PadW: 2, NoBias: true}, Shape{1, 4, 4}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%+v", tc.cfg), func(t *testing.T) {
			checkGrads(t, NewConv2D("conv", tc.cfg), tc.in, 2, 1e-2)
		})
	}
}

// TestConvNetGradients checks the layers composed in a Net, through the
// shared workspace and the flat parameter buffer. It has no kinks, so
// moving a parameter cannot cross one.
func TestConvNetGradients(t *testing.T) {
	n, err := NewNet(cpu.NewCPU(), Shape{2, 7, 7}, []Node{
		{Layer: NewConv2D("conv1", ConvConfig{Out: 4, KH: 3, PadH: 1, PadW: 1})},
		{Layer: NewAvgPool2D("pool1", PoolConfig{KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true})},
		{Layer: NewConv2D("conv2", ConvConfig{Out: 4, KH: 3, PadH: 1, PadW: 1, Groups: 4})},
		{Layer: NewConv2D("conv3", ConvConfig{Out: 3, KH: 1})},
		{Layer: NewGlobalAvgPool("gap")},
		{Layer: NewFlatten("flat")},
		{Layer: NewLinear("fc", 2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkNetGrads(t, n, 2, 1e-2)
}

// TestConv2DWorkspaceAfterBind: Workspace asks the backend that Bind gave.
func TestConv2DWorkspaceAfterBind(t *testing.T) {
	b := cpu.NewCPU()
	l := NewConv2D("c", ConvConfig{Out: 4, KH: 3})
	if _, err := l.Setup([]Shape{{2, 6, 6}}); err != nil {
		t.Fatal(err)
	}
	l.Bind(b, []gpu.Buffer{b.Alloc(72), b.Alloc(4)}, []gpu.Buffer{b.Alloc(72), b.Alloc(4)}, nil)
	if got, want := l.Workspace(8), 2*9*16; got != want {
		t.Errorf("workspace %d, want %d (one sample's column matrix)", got, want)
	}
}

func BenchmarkConv2DLayer(b *testing.B) {
	// lenet-caffe's conv2 at batch 64, forward and backward through a Net.
	be := cpu.NewCPU()
	n, err := NewNet(be, Shape{20, 12, 12}, []Node{{Layer: NewConv2D("conv2", ConvConfig{Out: 50, KH: 5})}})
	if err != nil {
		b.Fatal(err)
	}
	n.InitParams(rand.New(rand.NewPCG(1, 1)))
	// Random data, as training gives: zeroed inputs would time ReLU's and the
	// products' best case.
	r := rand.New(rand.NewPCG(2, 2))
	x, dy := be.Alloc(64*20*144), be.Alloc(64*50*64)
	for _, buf := range []gpu.Buffer{x, dy} {
		v := make([]float32, buf.Len())
		uniform(v, r)
		be.Upload(buf, v)
	}
	for b.Loop() {
		n.Forward(x, 64, true)
		n.Backward(dy)
	}
}
