//go:build opencl

package opencl

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/half"
)

// The device makes the same dropout masks as the CPU backend, bit for bit
// (in half storage: the CPU's values rounded to half, 0 and 1/(1-p) where
// the CPU has them), for lengths that end inside a Philox block, views at
// offsets that are not multiples of 4, and seeds with either half zero.
func TestOpenCLDropoutMask(t *testing.T) { bothStorages(t, testOpenCLDropoutMask) }

func testOpenCLDropoutMask(t *testing.T, o *OpenCL) {
	for _, n := range []int{1, 3, 4, 5, 127, 32 * 4096, 100_003} {
		for _, p := range []float32{0, 0.1, 0.3, 0.5, 0.9} {
			for _, seed := range []uint64{1, 1 << 32, 0x9e3779b97f4a7c15} {
				for _, off := range []int{0, 3} {
					t.Run(fmt.Sprintf("n=%d/p=%v/seed=%#x/off=%d", n, p, seed, off), func(t *testing.T) {
						want := make([]float32, n)
						newCPU().DropoutMask(gpu.Host(want), seed, p)
						if o.half {
							for i, v := range want {
								want[i] = half.Round(v)
							}
						}
						buf := o.Alloc(off + n + 2)
						o.Fill(buf, -1)
						o.DropoutMask(o.View(buf, off, n), seed, p)
						all := download(o, buf)
						if got := all[off : off+n]; !slices.Equal(got, want) {
							i := 0
							for got[i] == want[i] {
								i++
							}
							t.Fatalf("element %d: device %v, CPU %v", i, got[i], want[i])
						}
						for i, v := range slices.Concat(all[:off], all[off+n:]) {
							if v != -1 {
								t.Fatalf("element %d outside the view changed to %v", i, v)
							}
						}
					})
				}
			}
		}
	}
}
