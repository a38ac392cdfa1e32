package solver

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// Tests of the layers that join several inputs: Add and Concat.

func TestJoinSetup(t *testing.T) {
	cases := []struct {
		name    string
		layer   Layer
		in      []Shape
		want    Shape
		wantErr string
	}{
		{"add two", NewAdd("a"), []Shape{{2, 3, 3}, {2, 3, 3}}, Shape{2, 3, 3}, ""},
		{"add three", NewAdd("a"), []Shape{{4, 1, 1}, {4, 1, 1}, {4, 1, 1}}, Shape{4, 1, 1}, ""},
		{"add one input", NewAdd("a"), []Shape{{2, 3, 3}}, Shape{}, "at least 2 inputs"},
		{"add shape mismatch", NewAdd("a"), []Shape{{2, 3, 3}, {3, 3, 3}}, Shape{}, "no broadcasting"},
		{"concat two", NewConcat("c"), []Shape{{2, 3, 4}, {5, 3, 4}}, Shape{7, 3, 4}, ""},
		{"concat three", NewConcat("c"), []Shape{{1, 2, 2}, {2, 2, 2}, {3, 2, 2}}, Shape{6, 2, 2}, ""},
		{"concat one input", NewConcat("c"), []Shape{{2, 3, 3}}, Shape{}, "at least 2 inputs"},
		{"concat height mismatch", NewConcat("c"), []Shape{{2, 3, 3}, {2, 4, 3}}, Shape{}, "only channels may differ"},
		{"concat width mismatch", NewConcat("c"), []Shape{{2, 3, 3}, {2, 3, 2}}, Shape{}, "only channels may differ"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.layer.Setup(tc.in)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Errorf("output %v, want %v", got, tc.want)
			}
		})
	}
}

// runJoin runs l forward on host inputs and returns the output.
func runJoin(t *testing.T, l Layer, ins []Shape, xs [][]float32, n int) []float32 {
	t.Helper()
	b := cpu.NewCPU()
	out, err := l.Setup(ins)
	if err != nil {
		t.Fatal(err)
	}
	l.Bind(b, nil, nil, nil)
	bufs := make([]gpu.Buffer, len(xs))
	for i, x := range xs {
		bufs[i] = b.Alloc(len(x))
		b.Upload(bufs[i], x)
	}
	y := b.Alloc(n * out.Size())
	b.Fill(y, sentinel)
	l.Forward(&Pass{B: b, N: n}, y, bufs)
	return download(b, y)
}

func TestAddForward(t *testing.T) {
	s := Shape{1, 1, 3}
	got := runJoin(t, NewAdd("a"), []Shape{s, s, s}, [][]float32{{1, 2, 3, 4, 5, 6}, {10, 20, 30, 40, 50, 60}, {-1, -1, -1, -1, -1, -1}}, 2)
	if want := []float32{10, 21, 32, 43, 54, 65}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestConcatForward(t *testing.T) {
	// Two samples; input 0 has 1 channel of 2 pixels, input 1 has 2 channels.
	got := runJoin(t, NewConcat("c"), []Shape{{1, 1, 2}, {2, 1, 2}},
		[][]float32{{1, 2, 3, 4}, {10, 11, 12, 13, 20, 21, 22, 23}}, 2)
	want := []float32{1, 2, 10, 11, 12, 13, 3, 4, 20, 21, 22, 23}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestJoinGradients(t *testing.T) {
	checkGradsMulti(t, NewAdd("add2"), []Shape{{2, 3, 3}, {2, 3, 3}}, 2, 1e-2)
	checkGradsMulti(t, NewAdd("add3"), []Shape{{3, 2, 1}, {3, 2, 1}, {3, 2, 1}}, 3, 1e-2)
	checkGradsMulti(t, NewConcat("cat2"), []Shape{{1, 2, 2}, {3, 2, 2}}, 2, 1e-2)
	checkGradsMulti(t, NewConcat("cat3"), []Shape{{2, 1, 3}, {1, 1, 3}, {2, 1, 3}}, 3, 1e-2)
}

// TestResidualNetGradients checks a residual block and a channel
// concatenation inside a Net: the fan-out of one activation to two consumers
// makes the Net add two gradients, through Add's and Concat's Backward.
func TestResidualNetGradients(t *testing.T) {
	conv := func(name string, out int) *Conv2D {
		return NewConv2D(name, ConvConfig{Out: out, KH: 3, PadH: 1, PadW: 1})
	}
	// Small on purpose: the parameters are drawn from U(-1, 1), so a deep
	// stack grows the loss until float32 rounding swamps the differences.
	nodes := []Node{
		{Layer: conv("stem", 2)},                           // 0
		{Layer: conv("branch", 2)},                         // 1
		{Layer: NewAdd("res"), Inputs: []int{1, 0}},        // 2: branch + identity
		{Layer: conv("side", 1), Inputs: []int{0}},         // 3
		{Layer: NewConcat("cat"), Inputs: []int{2, 3, -1}}, // 4: 2+1+2 channels
		{Layer: NewLinear("fc", 2)},                        // 5
	}
	n, err := NewNet(cpu.NewCPU(), Shape{2, 3, 3}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if n.Out != (Shape{2, 1, 1}) {
		t.Fatalf("output %v", n.Out)
	}
	for seed := uint64(1); seed <= 20; seed++ {
		// Floor 1e-2: gradients under it are compared absolutely; float32
		// noise reaches 5e-5 there (seeds 2 and 6), far below any real bug.
		bad, err := gradCheck{Seed: seed, Floor: 1e-2}.net(n, 2)
		report(t, fmt.Sprintf("seed %d", seed), bad, err)
	}
}
