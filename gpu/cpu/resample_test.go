package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// resampleCase is a 14→28 bilinear axis (PyTorch's align_corners=False)
// of 8 samples × 24 channels: along H (inner 28: the rows of the output
// of the W pass) and along W (inner 1).
func resampleCase(t testing.TB) (*gpu.ResampleTaps, int) {
	m, err := gpu.ResampleAxis{In: 14, Out: 28, Scale: 2, Mode: gpu.ResampleLinear, Coord: gpu.CoordPytorchHalfPixel}.Taps()
	if err != nil {
		t.Fatal(err)
	}
	return m, 8 * 24
}

// TestResampleThreads: on several threads (the output rows cut into
// parts) Resample gives the bits of one thread and of the definition,
// forward and transposed, along an inner and the last axis.
func TestResampleThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	fwd, outer := resampleCase(t)
	r := rand.New(rand.NewPCG(7, 8))
	one := NewCPU()
	one.SetThreads(1)
	two := NewCPU()
	for _, m := range []*gpu.ResampleTaps{fwd, fwd.Transpose()} {
		for _, inner := range []int{28, 1} {
			x := gputest.Rand(r, outer*m.In*inner)
			want := make([]float32, outer*m.Out*inner)
			gputest.NaiveResample(want, x, m, outer, inner)
			for _, c := range []*CPU{one, two} {
				got := make([]float32, len(want))
				c.Resample(gpu.Host(got), gpu.Host(x), c.ResampleTable(m), outer, inner)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%d→%d inner %d, %d threads: element %d is %v, want %v", m.In, m.Out, inner, c.th.Threads(), i, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkResample puts the kernel beside the definition's loop
// (gputest.NaiveResample) on the axis of resampleCase: along H (inner 28),
// along W (inner 1, 28 times the rows: the same elements), and the
// transposed matrix along H (the backward pass).
func BenchmarkResample(b *testing.B) {
	fwd, outer := resampleCase(b)
	for _, c := range []struct {
		name         string
		m            *gpu.ResampleTaps
		outer, inner int
	}{{"H", fwd, outer, 28}, {"W", fwd, outer * 28, 1}, {"H-transposed", fwd.Transpose(), outer, 28}} {
		x := make([]float32, c.outer*c.m.In*c.inner)
		y := make([]float32, c.outer*c.m.Out*c.inner)
		b.Run(c.name+"/naive", func(b *testing.B) {
			b.SetBytes(int64(4 * (len(x) + len(y))))
			for b.Loop() {
				gputest.NaiveResample(y, x, c.m, c.outer, c.inner)
			}
		})
		b.Run(c.name+"/kernel", func(b *testing.B) {
			cpu := NewCPU()
			tab := cpu.ResampleTable(c.m)
			b.SetBytes(int64(4 * (len(x) + len(y))))
			for b.Loop() {
				cpu.Resample(gpu.Host(y), gpu.Host(x), tab, c.outer, c.inner)
			}
		})
	}
}
