package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// TestArchsListed checks that the machine's families are found: on amd64
// with AVX-512 all three, and that the best one is first.
func TestArchsListed(t *testing.T) {
	var names []string
	for _, ar := range archs {
		names = append(names, ar.name)
		if len(ar.kern) != ar.mr || len(ar.kern[0]) != ar.nr/ar.vl || ar.mc%ar.mr != 0 || ar.nc%ar.nr != 0 || ar.mr*ar.nr > maxTile {
			t.Errorf("%s: inconsistent blocking %+v", ar.name, *ar)
		}
	}
	if archs[len(archs)-1] != goArch || Kernel() != archs[0].name || (&Thread{}).arch() != archs[0] {
		t.Errorf("families %v: the pure-Go one must be last and the best first", names)
	}
	t.Logf("families %v, using %s", names, Kernel())
}

// TestKernelsAgainstTwin runs every variant of every family on random packed
// panels and compares its output bit for bit with the pure-Go twin computing
// with fused multiply-adds: same products, same order, same rounding. The
// pure-Go family itself is compared unfused with a tolerance.
func TestKernelsAgainstTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ar := range archs {
		for rows := 1; rows <= ar.mr; rows++ {
			for vecs := 1; vecs <= ar.nr/ar.vl; vecs++ {
				cols := vecs * ar.vl
				for _, k := range []int{0, 1, 2, 7, 64, 257} {
					for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.75, 0}, {0.5, -1.5}, {2, float32(math.Copysign(0, -1))}} {
						name := fmt.Sprintf("%s/%dx%d/k=%d/alpha=%v,beta=%v", ar.name, rows, vecs, k, ab[0], ab[1])
						a, b := randSlice(r, k*ar.mr+1), randSlice(r, k*ar.nr+1)
						// C with a margin around the tile, ldc wider than the tile.
						ldc := cols + 5
						c := randSlice(r, (rows+1)*ldc)
						if ab[1] == 0 {
							for i := range c {
								c[i] = float32(math.NaN())
							}
						}
						want := append([]float32(nil), c...)
						goKernel(rows, cols, ar.mr, ar.nr, k, a, b, want, ldc, ab[0], ab[1], ar != goArch)
						ar.kern[rows-1][vecs-1](k, &a[0], &b[0], &c[0], ldc, ab[0], ab[1])
						for i := range c {
							inTile := i/ldc < rows && i%ldc < cols
							got, w := c[i], want[i]
							switch {
							case !inTile && math.Float32bits(got) != math.Float32bits(w):
								t.Fatalf("%s: wrote outside the tile at %d: %v", name, i, got)
							case inTile && ar != goArch && math.Float32bits(got) != math.Float32bits(w):
								t.Fatalf("%s: element (%d,%d) = %v, twin %v", name, i/ldc, i%ldc, got, w)
							case inTile && ar == goArch && !(math.Abs(float64(got-w)) <= 1e-5*float64(k+1)):
								t.Fatalf("%s: element (%d,%d) = %v, twin %v", name, i/ldc, i%ldc, got, w)
							}
						}
					}
				}
			}
		}
	}
}
