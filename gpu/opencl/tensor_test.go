//go:build opencl

package opencl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// The structural kernels on OpenCL against the CPU, in both storages. The
// copies and the broadcast operations round once, as the CPU does, so with
// float storage they must agree exactly; the sums accumulate in acc_t.

func TestOpenCLStructural(t *testing.T) { bothStorages(t, testOpenCLStructural) }

// TestOpenCLConformance holds the OpenCL backend (float storage) to the
// contract every backend keeps (gpu/gputest), as gpu/cpu's TestConformance
// holds the CPU backend.
func TestOpenCLConformance(t *testing.T) {
	gputest.Conformance(t, func() gpu.Backend { return openCLForTest(t) })
}

func testOpenCLStructural(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(31, 32))
	for _, tc := range gputest.StridedCases() {
		for _, add := range []bool{false, true} {
			t.Run(fmt.Sprintf("copy %s add=%v", tc.Name, add), func(t *testing.T) {
				src, dst := newTwin(o, gputest.Rand(r, tc.NS)), newTwin(o, gputest.Rand(r, tc.ND))
				cpu.CopyStrided(dst.cpu, src.cpu, tc.G, add)
				o.CopyStrided(dst.cl, src.cl, tc.G, add)
				dst.check(t, o, "copy")
				if !o.half && !add {
					exact(t, download(o, dst.cl), dst.cpu.(gpu.Host))
				}
			})
		}
	}
	for _, s := range gputest.BroadcastShapes() {
		g, na, nb := gputest.BroadcastCase(s[0], s[1])
		n := 1
		for _, d := range g.Dims {
			n *= d
		}
		for _, op := range []gpu.BinOp{gpu.BinAdd, gpu.BinSub, gpu.BinMul, gpu.BinDiv} {
			t.Run(fmt.Sprintf("broadcast %v%v %v", s[0], s[1], op), func(t *testing.T) {
				a, b := newTwin(o, gputest.Rand(r, na)), newTwin(o, gputest.Rand(r, nb))
				if op == gpu.BinDiv { // keep divisors away from 0
					bv := gputest.Rand(r, nb)
					for i := range bv {
						bv[i] = 1.5 + bv[i]
					}
					b = newTwin(o, bv)
				}
				d := newTwin(o, gputest.Rand(r, n))
				cpu.Broadcast(op, d.cpu, a.cpu, b.cpu, g)
				o.Broadcast(op, d.cl, a.cl, b.cl, g)
				if !o.half {
					exact(t, download(o, d.cl), d.cpu.(gpu.Host))
				}
				d.check(t, o, "broadcast")
			})
		}
	}
	for _, g := range gputest.ReduceShapes() {
		t.Run(fmt.Sprint("reduce ", g.In, g.Out), func(t *testing.T) {
			ns, nd := 1, 1
			for k := range g.In {
				ns, nd = ns*g.In[k], nd*g.Out[k]
			}
			src, dst := newTwin(o, gputest.Rand(r, ns)), newTwin(o, gputest.Rand(r, nd))
			cpu.ReduceSum(dst.cpu, src.cpu, g, 0.5)
			o.ReduceSum(dst.cl, src.cl, g, 0.5)
			dst.check(t, o, "reduce")
		})
	}
	// A view's offset adds to the geometry's (the importer's concat writes
	// into views of a larger buffer).
	t.Run("views", func(t *testing.T) {
		base, src := newTwin(o, gputest.Rand(r, 40)), newTwin(o, gputest.Rand(r, 12))
		g := gpu.StridedGeom{Dims: []int{3, 4}, Dst: []int{8, 2}, Src: []int{4, 1}, DstOff: 1}
		cpu.CopyStrided(cpu.View(base.cpu, 5, 30), cpu.View(src.cpu, 0, 12), g, false)
		o.CopyStrided(o.View(base.cl, 5, 30), o.View(src.cl, 0, 12), g, false)
		base.check(t, o, "copy into a view")
	})
}

func exact(t *testing.T, got, want []float32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d: %v, CPU %v (float storage must agree exactly)", i, got[i], want[i])
		}
	}
}

// BenchmarkOpenCLStructural: the kernels of BenchmarkStructural on the device,
// each waited for, beside a plain Copy of the same tensor for the ratio.
func BenchmarkOpenCLStructural(b *testing.B) {
	o := openCLForTest(b)
	r := rand.New(rand.NewPCG(4, 16))
	const n, ch, hw = 32, 116, 28
	x := o.Alloc(n * ch * hw * hw)
	o.Upload(x, gputest.Rand(r, x.Len()))
	y, gate := o.Alloc(x.Len()), o.Alloc(n*ch)
	shuffle := gputest.PermGeom([]int{n, 2, ch / 2, hw, hw}, []int{0, 2, 1, 3, 4})
	se, _, _ := gputest.BroadcastCase([]int{n, ch, hw, hw}, []int{n, ch, 1, 1})
	red := gpu.ReduceGeom{In: []int{n, ch, hw, hw}, Out: []int{n, ch, 1, 1}}
	for _, bc := range []struct {
		name string
		f    func()
	}{
		{"shuffle", func() { o.CopyStrided(y, x, shuffle, false) }},
		{"copy", func() { o.Copy(y, x) }},
		{"se-mul", func() { o.Broadcast(gpu.BinMul, y, x, gate, se) }},
		{"spatial-sum", func() { o.ReduceSum(gate, x, red, 1) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			one := make([]float32, 1)
			bc.f() // PoCL compiles a kernel at its first launch
			o.Download(one, o.View(gate, 0, 1))
			for b.Loop() {
				bc.f()
				o.Download(one, o.View(gate, 0, 1)) // wait for the kernel: time execution, not enqueueing
			}
		})
	}
}
