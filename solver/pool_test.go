package solver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

func TestPool2DShapes(t *testing.T) {
	cases := []struct {
		layer   *Pool2D
		kind    string
		in, out Shape
	}{
		// lenet-caffe's pool: 2×2, stride 2.
		{NewMaxPool2D("p", PoolConfig{KH: 2}), "maxpool2d", Shape{20, 24, 24}, Shape{20, 12, 12}},
		{NewMaxPool2D("p", PoolConfig{KH: 3, StrideH: 2, StrideW: 2}), "maxpool2d", Shape{4, 7, 7}, Shape{4, 3, 3}},
		{NewMaxPool2D("p", PoolConfig{KH: 3, StrideH: 2, StrideW: 2, CeilMode: true}), "maxpool2d", Shape{4, 6, 6}, Shape{4, 3, 3}},
		{NewMaxPool2D("p", PoolConfig{KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}), "maxpool2d", Shape{4, 56, 56}, Shape{4, 28, 28}},
		// Ceil mode's last window must start inside the input or left padding.
		{NewMaxPool2D("p", PoolConfig{KH: 2, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true}), "maxpool2d", Shape{1, 4, 4}, Shape{1, 3, 3}},
		{NewAvgPool2D("p", PoolConfig{KH: 2, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, CeilMode: true}), "avgpool2d", Shape{3, 5, 5}, Shape{3, 3, 2}},
		{NewAvgPool2D("p", PoolConfig{KH: 3}), "avgpool2d", Shape{2, 7, 8}, Shape{2, 2, 2}},
		{NewGlobalAvgPool("p"), "globalavgpool", Shape{1024, 7, 7}, Shape{1024, 1, 1}},
		{NewGlobalAvgPool("p"), "globalavgpool", Shape{3, 5, 2}, Shape{3, 1, 1}},
	}
	for _, tc := range cases {
		out, err := tc.layer.Setup([]Shape{tc.in})
		if err != nil {
			t.Errorf("%s %+v on %v: %v", tc.kind, tc.layer.Cfg, tc.in, err)
			continue
		}
		if out != tc.out {
			t.Errorf("%s %+v on %v: output %v, want %v", tc.kind, tc.layer.Cfg, tc.in, out, tc.out)
		}
		if tc.layer.Kind() != tc.kind || tc.layer.Params() != nil || tc.layer.Workspace(64) != 0 {
			t.Errorf("kind %q (want %q), params %v, workspace %d", tc.layer.Kind(), tc.kind, tc.layer.Params(), tc.layer.Workspace(64))
		}
	}
}

func TestPool2DDefaults(t *testing.T) {
	cases := []struct {
		cfg, want PoolConfig
	}{
		{PoolConfig{KH: 2}, PoolConfig{KH: 2, KW: 2, StrideH: 2, StrideW: 2, DilH: 1, DilW: 1}},
		{PoolConfig{KH: 3, KW: 2, StrideH: 1}, PoolConfig{KH: 3, KW: 2, StrideH: 1, StrideW: 2, DilH: 1, DilW: 1}},
		{PoolConfig{KH: 3, DilW: 2}, PoolConfig{KH: 3, KW: 3, StrideH: 3, StrideW: 3, DilH: 1, DilW: 2}},
	}
	for _, tc := range cases {
		if got := NewMaxPool2D("p", tc.cfg).Cfg; got != tc.want {
			t.Errorf("max %+v: config %+v, want %+v", tc.cfg, got, tc.want)
		}
		if got := NewAvgPool2D("p", tc.cfg).Cfg; got != tc.want {
			t.Errorf("avg %+v: config %+v, want %+v", tc.cfg, got, tc.want)
		}
	}
}

func TestPool2DSetupErrors(t *testing.T) {
	cases := []struct {
		layer *Pool2D
		in    []Shape
		want  string
	}{
		{NewMaxPool2D("pool3", PoolConfig{}), []Shape{{1, 8, 8}}, "window 0x0"},
		{NewMaxPool2D("pool3", PoolConfig{KH: 3, PadH: 2}), []Shape{{1, 8, 8}}, "padding 2x0, want between 0 and half the window 3x3"},
		{NewAvgPool2D("pool3", PoolConfig{KH: 2, PadW: -1}), []Shape{{1, 8, 8}}, "padding 0x-1"},
		{NewAvgPool2D("pool3", PoolConfig{KH: 2, StrideH: -1}), []Shape{{1, 8, 8}}, "stride -1x2"},
		{NewMaxPool2D("pool3", PoolConfig{KH: 5}), []Shape{{1, 4, 8}}, "window 5x5 larger than padded input 4x8"},
		{NewMaxPool2D("pool3", PoolConfig{KH: 2}), []Shape{{1, 4, 4}, {1, 4, 4}}, "takes 1 input, got 2"},
		{NewGlobalAvgPool("pool3"), []Shape{{0, 4, 4}}, "input 0x4x4"},
	}
	for _, tc := range cases {
		_, err := tc.layer.Setup(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.layer.Kind()) {
			t.Errorf("%s %+v on %v: error %v, want one containing %q", tc.layer.Kind(), tc.layer.Cfg, tc.in, err, tc.want)
		}
	}
}

func TestPool2DGradients(t *testing.T) {
	cases := []struct {
		layer *Pool2D
		in    Shape
	}{
		{NewMaxPool2D("p", PoolConfig{KH: 2}), Shape{2, 4, 6}},
		{NewMaxPool2D("p", PoolConfig{KH: 3, StrideH: 2, StrideW: 2}), Shape{2, 7, 7}},                                   // overlapping
		{NewMaxPool2D("p", PoolConfig{KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true}), Shape{2, 6, 5}}, // padding, ceil
		{NewMaxPool2D("p", PoolConfig{KH: 2, KW: 3, StrideH: 1, StrideW: 2, PadW: 1}), Shape{1, 5, 6}},
		{NewAvgPool2D("p", PoolConfig{KH: 2}), Shape{2, 4, 6}},
		{NewAvgPool2D("p", PoolConfig{KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true, CountIncludePad: true}), Shape{2, 6, 5}},
		{NewAvgPool2D("p", PoolConfig{KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true}), Shape{2, 6, 5}},
		{NewAvgPool2D("p", PoolConfig{KH: 2, KW: 3, StrideH: 1, StrideW: 2, PadW: 1}), Shape{1, 5, 6}},
		{NewGlobalAvgPool("p"), Shape{3, 3, 5}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s_%+v", tc.layer.Kind(), tc.layer.Cfg), func(t *testing.T) {
			checkGrads(t, tc.layer, tc.in, 2, 1e-2)
		})
	}
}

// TestPool2DValues checks forward passes on a 4×4 ramp against values
// computed by hand (the padded ones agree with PyTorch 1.13's F.avg_pool2d).
func TestPool2DValues(t *testing.T) {
	b := cpu.NewCPU()
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(i)
	}
	cases := []struct {
		layer *Pool2D
		want  []float32
	}{
		{NewMaxPool2D("p", PoolConfig{KH: 2}), []float32{5, 7, 13, 15}},
		{NewAvgPool2D("p", PoolConfig{KH: 2}), []float32{2.5, 4.5, 10.5, 12.5}},
		{NewGlobalAvgPool("p"), []float32{7.5}},
		// Padding 1, stride 2: corner windows hold one input element; with
		// the pad counted they divide by 4, without by 1.
		{NewAvgPool2D("p", PoolConfig{KH: 2, PadH: 1, PadW: 1, CountIncludePad: true}), []float32{0, 0.75, 0.75, 3, 7.5, 4.5, 3, 6.75, 3.75}},
		{NewAvgPool2D("p", PoolConfig{KH: 2, PadH: 1, PadW: 1}), []float32{0, 1.5, 3, 6, 7.5, 9, 12, 13.5, 15}},
	}
	for _, tc := range cases {
		out, err := tc.layer.Setup([]Shape{{1, 4, 4}})
		if err != nil {
			t.Fatal(err)
		}
		y := b.Alloc(out.Size())
		tc.layer.Forward(&Pass{B: b, N: 1}, y, []gpu.Buffer{gpu.Host(x)})
		got := make([]float32, out.Size())
		b.Download(got, y)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s %+v: y = %v, want %v", tc.layer.Kind(), tc.layer.Cfg, got, tc.want)
		}
	}
}

func TestPool2DSkipsNilInputGradient(t *testing.T) {
	// A pooling layer right after the input needs no gradient: Backward must
	// do nothing rather than write through a nil buffer.
	b := cpu.NewCPU()
	l := NewMaxPool2D("p", PoolConfig{KH: 2})
	if _, err := l.Setup([]Shape{{1, 4, 4}}); err != nil {
		t.Fatal(err)
	}
	x := b.Alloc(16)
	l.Backward(&Pass{B: b, N: 1}, []gpu.Buffer{nil}, b.Alloc(4), []gpu.Buffer{x}, b.Alloc(4), false)
}
