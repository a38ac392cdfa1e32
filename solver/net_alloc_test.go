package solver

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
)

// A steady-state step allocates nothing, also in a residual network whose
// fan-out gradients go through the net's scratch buffers.
func TestResidualNetStepAllocatesNothing(t *testing.T) {
	b := cpu.NewCPU()
	net, err := NewNet(b, Shape{C: 8, H: 1, W: 1}, []Node{
		{Layer: NewLinear("fc1", 8)},
		{Layer: NewReLU("relu1")},
		{Layer: NewLinear("fc2", 8)},
		{Layer: NewAdd("add"), Inputs: []int{0, 2}}, // fc1's output fans out
		{Layer: NewLinear("out", 4)},
	})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	const batch = 5
	x, dy := b.Alloc(batch*8), b.Alloc(batch*4)
	b.Fill(x, 0.5)
	b.Fill(dy, 0.1)
	step := func() {
		net.Forward(x, batch, true)
		net.Backward(dy)
	}
	step()
	if allocs := testing.AllocsPerRun(20, step); allocs != 0 {
		t.Errorf("%v allocations per steady-state step, want 0", allocs)
	}
}

// appendTrainable (the trainer's allocation-free copy of Trainable's loop)
// agrees with Trainable whatever is frozen, also appending after a prefix.
func TestAppendTrainableMatchesTrainable(t *testing.T) {
	b := cpu.NewCPU()
	net, err := NewNet(b, Shape{C: 4, H: 1, W: 1}, []Node{
		{Layer: NewLinear("a", 4)},
		{Layer: NewReLU("r")},
		{Layer: NewLinear("b", 4)},
		{Layer: NewLinear("c", 4)},
		{Layer: NewLinear("d", 2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, frozen := range [][]string{nil, {"a"}, {"b"}, {"a", "c"}, {"a", "b", "c", "d"}} {
		net.Unfreeze()
		if err := net.Freeze(frozen...); err != nil {
			t.Fatal(err)
		}
		want := net.Trainable()
		prefix := []Range{{Off: 99, Len: 1}}
		got := net.appendTrainable(prefix)
		if !slices.Equal(got[:1], prefix) || !slices.Equal(got[1:], want) {
			t.Errorf("frozen %v: appendTrainable = %v, want %v after the prefix", frozen, got, want)
		}
	}
}
