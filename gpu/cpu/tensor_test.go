package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// The structural kernels against naive loops over the unmerged index space.

// forIndex calls f with every index of dims in row-major order.
func forIndex(dims []int, f func(idx []int)) {
	total := 1
	for _, d := range dims {
		total *= d
	}
	idx := make([]int, len(dims))
	for i := range total {
		r := i
		for k := len(dims) - 1; k >= 0; k-- {
			idx[k] = r % dims[k]
			r /= dims[k]
		}
		f(idx)
	}
}

func dot(idx, strides []int) int {
	o := 0
	for k := range idx {
		o += idx[k] * strides[k]
	}
	return o
}

func naiveCopyStrided(d, s []float32, g gpu.StridedGeom, add bool) {
	forIndex(g.Dims, func(idx []int) {
		o := g.DstOff + dot(idx, g.Dst)
		v := s[g.SrcOff+dot(idx, g.Src)]
		if add {
			v += d[o]
		}
		d[o] = v
	})
}

func naiveBroadcast(op gpu.BinOp, d, a, b []float32, g gpu.BroadcastGeom) {
	i := 0
	forIndex(g.Dims, func(idx []int) {
		x, y := a[dot(idx, g.A)], b[dot(idx, g.B)]
		switch op {
		case gpu.BinAdd:
			d[i] = x + y
		case gpu.BinSub:
			d[i] = x - y
		case gpu.BinMul:
			d[i] = x * y
		case gpu.BinDiv:
			d[i] = x / y
		}
		i++
	})
}

// naiveReduceSum sums in the documented order: each output's source
// elements in row-major order of the reduced axes, in float32.
func naiveReduceSum(d, s []float32, g gpu.ReduceGeom, alpha float32) {
	src, dst := gpu.ContiguousStrides(g.In), gpu.ContiguousStrides(g.Out)
	var red []int
	for k := range g.In {
		red = append(red, g.In[k]/g.Out[k])
	}
	forIndex(g.Out, func(o []int) {
		var acc float32
		forIndex(red, func(r []int) {
			full := make([]int, len(o))
			for k := range o {
				full[k] = o[k] + r[k] // one of them is 0 on every axis
			}
			acc += s[dot(full, src)]
		})
		d[dot(o, dst)] = alpha * acc
	})
}

func TestCopyStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 16))
	c := NewCPU()
	for _, tc := range gputest.StridedCases() {
		for _, add := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/add=%v", tc.Name, add), func(t *testing.T) {
				src, d0 := randSlice(r, tc.NS), randSlice(r, tc.ND)
				got, want := append([]float32(nil), d0...), append([]float32(nil), d0...)
				c.CopyStrided(gpu.Host(got), gpu.Host(src), tc.G, add)
				naiveCopyStrided(want, src, tc.G, add)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
					}
				}
			})
		}
	}
}

func TestBroadcast(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 16))
	c := NewCPU()
	for _, s := range gputest.BroadcastShapes() {
		g, na, nb := gputest.BroadcastCase(s[0], s[1])
		n := 1
		for _, d := range g.Dims {
			n *= d
		}
		for _, op := range []gpu.BinOp{gpu.BinAdd, gpu.BinSub, gpu.BinMul, gpu.BinDiv} {
			t.Run(fmt.Sprintf("%v%v/%v", s[0], s[1], op), func(t *testing.T) {
				a, b := randSlice(r, na), randSlice(r, nb)
				got, want := make([]float32, n), make([]float32, n)
				c.Broadcast(op, gpu.Host(got), gpu.Host(a), gpu.Host(b), g)
				naiveBroadcast(op, want, a, b, g)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
					}
				}
			})
		}
	}
}

func TestReduceSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 16))
	c := NewCPU()
	for _, g := range gputest.ReduceShapes() {
		t.Run(fmt.Sprint(g.In, g.Out), func(t *testing.T) {
			ns, nd := 1, 1
			for k := range g.In {
				ns, nd = ns*g.In[k], nd*g.Out[k]
			}
			src := randSlice(r, ns)
			got, want := randSlice(r, nd), make([]float32, nd)
			c.ReduceSum(gpu.Host(got), gpu.Host(src), g, 0.25)
			naiveReduceSum(want, src, g, 0.25)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// BenchmarkStructural: the structural kernels at the sizes of a
// ShuffleNet-like block at batch 32 (116 channels, 28×28), naive loop beside
// each for the ratio.
func BenchmarkStructural(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 16))
	c := NewCPU()
	const n, ch, hw = 32, 116, 28
	x := randSlice(r, n*ch*hw*hw)
	y := make([]float32, len(x))
	shuffle := gputest.PermGeom([]int{n, 2, ch / 2, hw, hw}, []int{0, 2, 1, 3, 4})
	b.Run("shuffle/kernel", func(b *testing.B) {
		for b.Loop() {
			c.CopyStrided(gpu.Host(y), gpu.Host(x), shuffle, false)
		}
	})
	b.Run("shuffle/naive", func(b *testing.B) {
		for b.Loop() {
			naiveCopyStrided(y, x, shuffle, false)
		}
	})
	nhwc := gputest.PermGeom([]int{n, hw, hw, ch}, []int{0, 3, 1, 2})
	b.Run("nhwc2nchw/kernel", func(b *testing.B) {
		for b.Loop() {
			c.CopyStrided(gpu.Host(y), gpu.Host(x), nhwc, false)
		}
	})
	gate := randSlice(r, n*ch)
	se, _, _ := gputest.BroadcastCase([]int{n, ch, hw, hw}, []int{n, ch, 1, 1})
	b.Run("se-mul/kernel", func(b *testing.B) {
		for b.Loop() {
			c.Broadcast(gpu.BinMul, gpu.Host(y), gpu.Host(x), gpu.Host(gate), se)
		}
	})
	b.Run("se-mul/naive", func(b *testing.B) {
		for b.Loop() {
			naiveBroadcast(gpu.BinMul, y, x, gate, se)
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
			naiveReduceSum(gate, x, red, 1)
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
	x := randSlice(r, n*ch*hw*hw)
	gate := randSlice(r, n*ch)
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
	naiveCopyStrided(ny, x, shuffle, false)
	naiveCopyStrided(ny, x, shuffle, true)
	naiveBroadcast(gpu.BinMul, nz, x, gate, se)
	naiveReduceSum(ns, x, red, 0.5)
	naiveReduceSum(nsc, x, redC, 1)
	for k, naive := range [][]float32{ny, nz, ns, nsc} {
		for i := range naive {
			if math.Float32bits(got[k][i]) != math.Float32bits(want[k][i]) || math.Float32bits(got[k][i]) != math.Float32bits(naive[i]) {
				t.Fatalf("result %d element %d: %v on two threads, %v on one, %v naive", k, i, got[k][i], want[k][i], naive[i])
			}
		}
	}
}
