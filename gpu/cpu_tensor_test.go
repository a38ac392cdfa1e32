package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
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

func naiveCopyStrided(d, s []float32, g StridedGeom, add bool) {
	forIndex(g.Dims, func(idx []int) {
		o := g.DstOff + dot(idx, g.Dst)
		v := s[g.SrcOff+dot(idx, g.Src)]
		if add {
			v += d[o]
		}
		d[o] = v
	})
}

func naiveBroadcast(op BinOp, d, a, b []float32, g BroadcastGeom) {
	i := 0
	forIndex(g.Dims, func(idx []int) {
		x, y := a[dot(idx, g.A)], b[dot(idx, g.B)]
		switch op {
		case BinAdd:
			d[i] = x + y
		case BinSub:
			d[i] = x - y
		case BinMul:
			d[i] = x * y
		case BinDiv:
			d[i] = x / y
		}
		i++
	})
}

// naiveReduceSum sums in the documented order: each output's source
// elements in row-major order of the reduced axes, in float32.
func naiveReduceSum(d, s []float32, g ReduceGeom, alpha float32) {
	src, dst := ContiguousStrides(g.In), ContiguousStrides(g.Out)
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

// permGeom is the copy of a contiguous tensor of dims into the contiguous
// transpose by perm (out axis k is in axis perm[k]).
func permGeom(dims, perm []int) StridedGeom {
	in := ContiguousStrides(dims)
	out := make([]int, len(dims))
	src := make([]int, len(dims))
	for k, p := range perm {
		out[k], src[k] = dims[p], in[p]
	}
	return StridedGeom{Dims: out, Dst: ContiguousStrides(out), Src: src}
}

// stridedCases are the layouts the importer produces.
func stridedCases() []struct {
	name string
	g    StridedGeom
	nd   int
	ns   int
} {
	type c = struct {
		name string
		g    StridedGeom
		nd   int
		ns   int
	}
	var out []c
	perm := func(name string, dims, p []int) {
		n := 1
		for _, d := range dims {
			n *= d
		}
		out = append(out, c{name, permGeom(dims, p), n, n})
	}
	perm("channel shuffle", []int{3, 2, 5, 4, 3}, []int{0, 2, 1, 3, 4})
	perm("nhwc to nchw", []int{2, 5, 6, 7}, []int{0, 3, 1, 2})
	perm("nchw to nhwc", []int{2, 7, 5, 6}, []int{0, 2, 3, 1})
	perm("plain copy", []int{4, 3, 2}, []int{0, 1, 2})
	perm("6-D reversal", []int{2, 3, 2, 3, 2, 2}, []int{0, 5, 4, 3, 2, 1})
	// Slice of N×8×6×7 along H: rows 1, 3, 5 (step 2) into N×8×3×7.
	out = append(out, c{"slice step", StridedGeom{Dims: []int{2, 8, 3, 7}, Dst: ContiguousStrides([]int{2, 8, 3, 7}),
		Src: []int{8 * 6 * 7, 6 * 7, 2 * 7, 1}, SrcOff: 7}, 2 * 8 * 3 * 7, 2 * 8 * 6 * 7})
	// Pad N×3×4×5 into N×3×7×8 at (1, 2): the interior copy.
	out = append(out, c{"pad interior", StridedGeom{Dims: []int{2, 3, 4, 5}, Dst: []int{3 * 7 * 8, 7 * 8, 8, 1},
		Src: ContiguousStrides([]int{2, 3, 4, 5}), DstOff: 8 + 2}, 2 * 3 * 7 * 8, 2 * 3 * 4 * 5})
	// Concat input 1 (N×2×3×4 along H, at 5 of 9).
	out = append(out, c{"concat along H", StridedGeom{Dims: []int{2, 2, 3, 4}, Dst: []int{2 * 9 * 4, 9 * 4, 4, 1},
		Src: ContiguousStrides([]int{2, 2, 3, 4}), DstOff: 5 * 4}, 2 * 2 * 9 * 4, 2 * 2 * 3 * 4})
	// Broadcast N×C×1×1 over H×W (a reduction's backward pass).
	out = append(out, c{"broadcast spatial", StridedGeom{Dims: []int{3, 5, 4, 6}, Dst: ContiguousStrides([]int{3, 5, 4, 6}),
		Src: []int{5, 1, 0, 0}}, 3 * 5 * 4 * 6, 3 * 5})
	return out
}

func TestCopyStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 16))
	c := NewCPU()
	for _, tc := range stridedCases() {
		for _, add := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/add=%v", tc.name, add), func(t *testing.T) {
				src, d0 := randSlice(r, tc.ns), randSlice(r, tc.nd)
				got, want := append([]float32(nil), d0...), append([]float32(nil), d0...)
				c.CopyStrided(Host(got), Host(src), tc.g, add)
				naiveCopyStrided(want, src, tc.g, add)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// broadcastCase returns the geometry of a op b where a has dims ad and b
// dims bd (numpy rules, right-aligned; both of the output's rank here).
func broadcastCase(ad, bd []int) (BroadcastGeom, int, int) {
	g := BroadcastGeom{Dims: make([]int, len(ad)), A: ContiguousStrides(ad), B: ContiguousStrides(bd)}
	na, nb := 1, 1
	for k := range ad {
		g.Dims[k] = max(ad[k], bd[k])
		if ad[k] == 1 {
			g.A[k] = 0
		}
		if bd[k] == 1 {
			g.B[k] = 0
		}
		na, nb = na*ad[k], nb*bd[k]
	}
	return g, na, nb
}

var broadcastShapes = [][2][]int{
	{{4, 6, 5, 7}, {4, 6, 1, 1}}, // squeeze-excitation gate
	{{4, 6, 5, 7}, {1, 6, 1, 1}}, // per-channel constant
	{{4, 6, 5, 7}, {1, 1, 1, 1}}, // scalar
	{{4, 6, 5, 7}, {4, 6, 5, 7}}, // same shape
	{{4, 1, 5, 7}, {4, 6, 1, 1}}, // both broadcast
	{{3, 2, 4, 3, 5}, {1, 2, 1, 3, 1}},
}

func TestBroadcast(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 16))
	c := NewCPU()
	for _, s := range broadcastShapes {
		g, na, nb := broadcastCase(s[0], s[1])
		n := 1
		for _, d := range g.Dims {
			n *= d
		}
		for _, op := range []BinOp{BinAdd, BinSub, BinMul, BinDiv} {
			t.Run(fmt.Sprintf("%v%v/%v", s[0], s[1], op), func(t *testing.T) {
				a, b := randSlice(r, na), randSlice(r, nb)
				got, want := make([]float32, n), make([]float32, n)
				c.Broadcast(op, Host(got), Host(a), Host(b), g)
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

var reduceShapes = []ReduceGeom{
	{In: []int{4, 6, 5, 7}, Out: []int{4, 6, 1, 1}}, // spatial mean, SE gate gradient
	{In: []int{4, 6, 5, 7}, Out: []int{1, 6, 1, 1}}, // per-channel
	{In: []int{4, 6, 5, 7}, Out: []int{1, 1, 1, 1}}, // everything
	{In: []int{4, 6, 5, 7}, Out: []int{4, 6, 5, 7}}, // nothing
	{In: []int{4, 6, 5, 7}, Out: []int{4, 1, 5, 1}}, // interleaved
	{In: []int{3, 2, 4, 3, 5}, Out: []int{3, 1, 4, 1, 5}},
}

func TestReduceSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 16))
	c := NewCPU()
	for _, g := range reduceShapes {
		t.Run(fmt.Sprint(g.In, g.Out), func(t *testing.T) {
			ns, nd := 1, 1
			for k := range g.In {
				ns, nd = ns*g.In[k], nd*g.Out[k]
			}
			src := randSlice(r, ns)
			got, want := randSlice(r, nd), make([]float32, nd)
			c.ReduceSum(Host(got), Host(src), g, 0.25)
			naiveReduceSum(want, src, g, 0.25)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestCanon checks the merging of contiguous axes and the panics on our own
// bugs (too many axes, a view outside its buffer).
func TestCanon(t *testing.T) {
	g := canon("t", []int{2, 3, 4, 5}, ContiguousStrides([]int{2, 3, 4, 5}))
	if g.dims != [MaxRank]int{1, 1, 1, 1, 1, 120} || g.strides[0][MaxRank-1] != 1 {
		t.Fatalf("a contiguous copy merges to %v %v, want one axis of 120", g.dims, g.strides[0])
	}
	sh := permGeom([]int{2, 4, 3, 5, 6}, []int{0, 2, 1, 3, 4}) // channel shuffle: H and W merge
	g = canon("t", sh.Dims, sh.Dst, sh.Src)
	if g.dims != [MaxRank]int{1, 1, 2, 3, 4, 30} {
		t.Fatalf("channel shuffle merges to %v", g.dims)
	}
	panics := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(fmt.Sprint(r), want) {
				t.Errorf("%s: panic %v, want one containing %q", name, r, want)
			}
		}()
		f()
	}
	c := NewCPU()
	rev := permGeom([]int{2, 2, 2, 2, 2, 2, 2}, []int{6, 5, 4, 3, 2, 1, 0})
	panics("7 axes", "at most 6", func() { c.CopyStrided(c.Alloc(128), c.Alloc(128), rev, false) })
	panics("outside", "reaches element", func() {
		c.CopyStrided(c.Alloc(10), c.Alloc(10), StridedGeom{Dims: []int{10}, Dst: []int{1}, Src: []int{1}, SrcOff: 1}, false)
	})
	panics("reduce mismatch", "not in", func() {
		c.ReduceSum(c.Alloc(4), c.Alloc(12), ReduceGeom{In: []int{3, 4}, Out: []int{2, 2}}, 1)
	})
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
	shuffle := permGeom([]int{n, 2, ch / 2, hw, hw}, []int{0, 2, 1, 3, 4})
	b.Run("shuffle/kernel", func(b *testing.B) {
		for b.Loop() {
			c.CopyStrided(Host(y), Host(x), shuffle, false)
		}
	})
	b.Run("shuffle/naive", func(b *testing.B) {
		for b.Loop() {
			naiveCopyStrided(y, x, shuffle, false)
		}
	})
	nhwc := permGeom([]int{n, hw, hw, ch}, []int{0, 3, 1, 2})
	b.Run("nhwc2nchw/kernel", func(b *testing.B) {
		for b.Loop() {
			c.CopyStrided(Host(y), Host(x), nhwc, false)
		}
	})
	gate := randSlice(r, n*ch)
	se, _, _ := broadcastCase([]int{n, ch, hw, hw}, []int{n, ch, 1, 1})
	b.Run("se-mul/kernel", func(b *testing.B) {
		for b.Loop() {
			c.Broadcast(BinMul, Host(y), Host(x), Host(gate), se)
		}
	})
	b.Run("se-mul/naive", func(b *testing.B) {
		for b.Loop() {
			naiveBroadcast(BinMul, y, x, gate, se)
		}
	})
	red := ReduceGeom{In: []int{n, ch, hw, hw}, Out: []int{n, ch, 1, 1}}
	b.Run("spatial-sum/kernel", func(b *testing.B) {
		for b.Loop() {
			c.ReduceSum(Host(gate), Host(x), red, 1)
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
	shuffle := permGeom([]int{n, 2, ch / 2, hw, hw}, []int{0, 2, 1, 3, 4})
	se, _, _ := broadcastCase([]int{n, ch, hw, hw}, []int{n, ch, 1, 1})
	red := ReduceGeom{In: []int{n, ch, hw, hw}, Out: []int{n, ch, 1, 1}}
	redC := ReduceGeom{In: []int{n, ch, hw, hw}, Out: []int{1, ch, 1, 1}}
	run := func(c *CPU) [][]float32 {
		y, z := make([]float32, len(x)), make([]float32, len(x))
		s, sc := make([]float32, n*ch), make([]float32, ch)
		c.CopyStrided(Host(y), Host(x), shuffle, false)
		c.CopyStrided(Host(y), Host(x), shuffle, true)
		c.Broadcast(BinMul, Host(z), Host(x), Host(gate), se)
		c.ReduceSum(Host(s), Host(x), red, 0.5)
		c.ReduceSum(Host(sc), Host(x), redC, 1)
		return [][]float32{y, z, s, sc}
	}
	one := NewCPU()
	one.SetThreads(1)
	want, got := run(one), run(NewCPU())
	ny, nz, ns, nsc := make([]float32, len(x)), make([]float32, len(x)), make([]float32, n*ch), make([]float32, ch)
	naiveCopyStrided(ny, x, shuffle, false)
	naiveCopyStrided(ny, x, shuffle, true)
	naiveBroadcast(BinMul, nz, x, gate, se)
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

// ParseBinOp reads back what String writes (graph descriptions and ONNX
// store the operation by name) and refuses anything else.
func TestParseBinOp(t *testing.T) {
	for _, o := range []BinOp{BinAdd, BinSub, BinMul, BinDiv} {
		if got, ok := ParseBinOp(o.String()); !ok || got != o {
			t.Errorf("ParseBinOp(%q) = %v, %v; want %v", o.String(), got, ok, o)
		}
	}
	for _, bad := range []string{"", "add", "Pow", "binop(5)"} {
		if got, ok := ParseBinOp(bad); ok {
			t.Errorf("ParseBinOp(%q) = %v, want none", bad, got)
		}
	}
}
