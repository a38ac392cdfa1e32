package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// The structural kernels against naive loops over the unmerged index space.

// BenchmarkStructural: the structural kernels at the sizes of a
// ShuffleNet-like block at batch 32 (116 channels, 28×28), naive loop beside
// each for the ratio.
func BenchmarkStructural(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 16))
	c := NewCPU()
	const n, ch, hw = 32, 116, 28
	x := gputest.Rand(r, n*ch*hw*hw)
	y := make([]float32, len(x))
	shuffle := gputest.PermGeom([]int{n, 2, ch / 2, hw, hw}, []int{0, 2, 1, 3, 4})
	b.Run("shuffle/kernel", func(b *testing.B) {
		for b.Loop() {
			c.CopyStrided(gpu.Host(y), gpu.Host(x), shuffle, false)
		}
	})
	b.Run("shuffle/naive", func(b *testing.B) {
		for b.Loop() {
			gputest.NaiveCopyStrided(y, x, shuffle, false)
		}
	})
	nhwc := gputest.PermGeom([]int{n, hw, hw, ch}, []int{0, 3, 1, 2})
	b.Run("nhwc2nchw/kernel", func(b *testing.B) {
		for b.Loop() {
			c.CopyStrided(gpu.Host(y), gpu.Host(x), nhwc, false)
		}
	})
	gate := gputest.Rand(r, n*ch)
	se, _, _ := gputest.BroadcastCase([]int{n, ch, hw, hw}, []int{n, ch, 1, 1})
	b.Run("se-mul/kernel", func(b *testing.B) {
		for b.Loop() {
			c.Broadcast(gpu.BinMul, gpu.Host(y), gpu.Host(x), gpu.Host(gate), se)
		}
	})
	// The gate's gradient: g times the gated input (a tight loop), and g
	// times the gate through the table's function (Max's, for the ratio).
	dy := gputest.Rand(r, len(x))
	b.Run("se-mul-partial/kernel", func(b *testing.B) {
		for b.Loop() {
			c.BroadcastPartial(gpu.BinMul, 1, gpu.Host(y), gpu.Host(dy), gpu.Host(x), gpu.Host(gate), nil, se)
		}
	})
	b.Run("se-max-partial/table", func(b *testing.B) {
		for b.Loop() {
			c.BroadcastPartial(gpu.BinMax, 1, gpu.Host(y), gpu.Host(dy), gpu.Host(x), gpu.Host(gate), nil, se)
		}
	})
	b.Run("se-mul/naive", func(b *testing.B) {
		for b.Loop() {
			gputest.NaiveBroadcast(gpu.BinMul, y, x, gate, se)
		}
	})
	red := gpu.ReduceGeom{In: []int{n, ch, hw, hw}, Out: []int{n, ch, 1, 1}}
	b.Run("spatial-sum/kernel", func(b *testing.B) {
		for b.Loop() {
			c.ReduceSum(gpu.Host(gate), gpu.Host(x), red, 1)
		}
	})
	b.Run("spatial-sum/naive", func(b *testing.B) {
		for b.Loop() {
			gputest.NaiveReduceSum(gate, x, red, 1)
		}
	})
}

// TestStructuralThreads: on several threads (the rows cut into parts) the
// kernels give the bits of one thread and of the naive loops.
func TestStructuralThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	r := rand.New(rand.NewPCG(5, 16))
	const n, ch, hw = 8, 24, 14
	x := gputest.Rand(r, n*ch*hw*hw)
	gate := gputest.Rand(r, n*ch)
	shuffle := gputest.PermGeom([]int{n, 2, ch / 2, hw, hw}, []int{0, 2, 1, 3, 4})
	se, _, _ := gputest.BroadcastCase([]int{n, ch, hw, hw}, []int{n, ch, 1, 1})
	red := gpu.ReduceGeom{In: []int{n, ch, hw, hw}, Out: []int{n, ch, 1, 1}}
	redC := gpu.ReduceGeom{In: []int{n, ch, hw, hw}, Out: []int{1, ch, 1, 1}}
	run := func(c *CPU) [][]float32 {
		y, z := make([]float32, len(x)), make([]float32, len(x))
		s, sc := make([]float32, n*ch), make([]float32, ch)
		c.CopyStrided(gpu.Host(y), gpu.Host(x), shuffle, false)
		c.CopyStrided(gpu.Host(y), gpu.Host(x), shuffle, true)
		c.Broadcast(gpu.BinMul, gpu.Host(z), gpu.Host(x), gpu.Host(gate), se)
		c.ReduceSum(gpu.Host(s), gpu.Host(x), red, 0.5)
		c.ReduceSum(gpu.Host(sc), gpu.Host(x), redC, 1)
		return [][]float32{y, z, s, sc}
	}
	one := NewCPU()
	one.SetThreads(1)
	want, got := run(one), run(NewCPU())
	ny, nz, ns, nsc := make([]float32, len(x)), make([]float32, len(x)), make([]float32, n*ch), make([]float32, ch)
	gputest.NaiveCopyStrided(ny, x, shuffle, false)
	gputest.NaiveCopyStrided(ny, x, shuffle, true)
	gputest.NaiveBroadcast(gpu.BinMul, nz, x, gate, se)
	gputest.NaiveReduceSum(ns, x, red, 0.5)
	gputest.NaiveReduceSum(nsc, x, redC, 1)
	for k, naive := range [][]float32{ny, nz, ns, nsc} {
		for i := range naive {
			if math.Float32bits(got[k][i]) != math.Float32bits(want[k][i]) || math.Float32bits(got[k][i]) != math.Float32bits(naive[i]) {
				t.Fatalf("result %d element %d: %v on two threads, %v on one, %v naive", k, i, got[k][i], want[k][i], naive[i])
			}
		}
	}
}

// TestConformance holds the CPU backend to the contract every backend keeps
// (gpu/gputest).
func TestConformance(t *testing.T) {
	gputest.Conformance(t, func() gpu.Backend { return NewCPU() })
}
