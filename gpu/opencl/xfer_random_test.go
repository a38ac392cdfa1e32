//go:build opencl

package opencl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/half"
)

// TestOpenCLTransferQueueRandom runs seeded random sequences of uploads,
// downloads, fills, copies and additions on views of a few allocations
// (halves of each, so that the allocation-level rule is exercised) and
// checks every download, bit for bit, against the same operations on host
// slices: whatever queue an upload takes, the kernels must see what one
// in-order queue would have shown them.
func TestOpenCLTransferQueueRandom(t *testing.T) {
	for _, staged := range []bool{false, true} {
		t.Run(fmt.Sprintf("staged=%v", staged), func(t *testing.T) {
			bothStorages(t, func(t *testing.T, o *OpenCL) {
				if o.ctx.xfer == nil {
					t.Skip("the driver refused a second queue")
				}
				if staged {
					withStaging(t, o, 4096, 3*4096+4, 2)
				}
				for seed := uint64(1); seed <= 4; seed++ {
					randomXfer(t, o, seed)
				}
			})
		})
	}
}

func randomXfer(t *testing.T, o *OpenCL, seed uint64) {
	const n, allocs, ops = 1 << 16, 3, 300
	r := rand.New(rand.NewPCG(seed, 99))
	round := func(v float32) float32 {
		if o.half {
			return half.Round(v)
		}
		return v
	}
	type view struct {
		b    gpu.Buffer
		host []float32
	}
	var views []view
	for range allocs {
		b := o.Alloc(n)
		host := make([]float32, n)
		views = append(views, view{o.View(b, 0, n/2), host[:n/2]}, view{o.View(b, n/2, n/2), host[n/2:]})
	}
	x0 := o.ctx.xferUp
	for i := range ops {
		v := views[r.IntN(len(views))]
		switch op := r.IntN(10); {
		case op < 3:
			data := make([]float32, n/2)
			base := r.IntN(50)
			for j := range data {
				data[j] = float32(base + j%17)
			}
			o.Upload(v.b, data)
			copy(v.host, data)
		case op < 4:
			got := download(o, v.b)
			for j := range got {
				if got[j] != v.host[j] {
					t.Fatalf("seed %d, op %d: element %d is %g, want %g", seed, i, j, got[j], v.host[j])
				}
			}
		case op < 5:
			f := float32(r.IntN(9))
			o.Fill(v.b, f)
			for j := range v.host {
				v.host[j] = f
			}
		default:
			w := views[r.IntN(len(views))]
			if w.b == v.b {
				continue
			}
			if op < 7 {
				o.Copy(v.b, w.b)
				copy(v.host, w.host)
			} else {
				for range 1 + r.IntN(8) {
					o.Axpy(1, w.b, v.b)
					for j := range v.host {
						v.host[j] = round(v.host[j] + w.host[j])
					}
				}
			}
		}
	}
	for k, v := range views {
		got := download(o, v.b)
		for j := range got {
			if got[j] != v.host[j] {
				t.Fatalf("seed %d, end, view %d: element %d is %g, want %g", seed, k, j, got[j], v.host[j])
			}
		}
	}
	if o.ctx.xferUp == x0 {
		t.Errorf("seed %d: no upload took the transfer queue", seed)
	}
}
