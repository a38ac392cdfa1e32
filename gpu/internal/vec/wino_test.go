package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// WinoIn, WinoOut and WinoDy against their Go twins at every tail length, with
// NaN, ±0, ±Inf and denormals among the inputs; the elements past n must
// stay untouched.
func TestWinoAgainstTwin(t *testing.T) {
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-40, -1e-40, math.MaxFloat32}
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(7, 7))
		for n := 0; n <= 40; n++ {
			var d [4][]float32
			for i := range d {
				d[i] = randSlice(r, n)
				for j := range d[i] {
					if r.IntN(6) == 0 {
						d[i][j] = special[r.IntN(len(special))]
					}
				}
			}
			var got, want [4][]float32
			for i := range got {
				got[i] = randSlice(r, n+3)
				want[i] = append([]float32(nil), got[i]...)
			}
			winoInGo([4][]float32{want[0][:n], want[1][:n], want[2][:n], want[3][:n]}, d)
			WinoIn([4][]float32{got[0][:n], got[1][:n], got[2][:n], got[3][:n]}, d)
			for i := range got {
				if !sameBitsOrNaN(got[i], want[i]) {
					t.Fatalf("WinoIn n=%d: row %d\n got %v\nwant %v", n, i, got[i], want[i])
				}
			}
			winoOutGo(want[0][:n], want[1][:n], d)
			WinoOut(got[0][:n], got[1][:n], d)
			for i := range 2 {
				if !sameBitsOrNaN(got[i], want[i]) {
					t.Fatalf("WinoOut n=%d: row %d\n got %v\nwant %v", n, i, got[i], want[i])
				}
			}
			winoDyGo([4][]float32{want[0][:n], want[1][:n], want[2][:n], want[3][:n]}, d[0], d[1])
			WinoDy([4][]float32{got[0][:n], got[1][:n], got[2][:n], got[3][:n]}, d[0], d[1])
			for i := range got {
				if !sameBitsOrNaN(got[i], want[i]) {
					t.Fatalf("WinoDy n=%d: row %d\n got %v\nwant %v", n, i, got[i], want[i])
				}
			}
		}
	})
}

// The twins compute the transforms as written.
func TestWinoSemantics(t *testing.T) {
	d := [4][]float32{{1}, {2}, {4}, {8}}
	a := [4][]float32{make([]float32, 1), make([]float32, 1), make([]float32, 1), make([]float32, 1)}
	WinoIn(a, d)
	if a[0][0] != -3 || a[1][0] != 6 || a[2][0] != 2 || a[3][0] != -6 {
		t.Errorf("WinoIn(1, 2, 4, 8) = %v, %v, %v, %v; want -3, 6, 2, -6", a[0][0], a[1][0], a[2][0], a[3][0])
	}
	WinoOut(a[0], a[1], d)
	if a[0][0] != 7 || a[1][0] != -10 {
		t.Errorf("WinoOut(1, 2, 4, 8) = %v, %v; want 7, -10", a[0][0], a[1][0])
	}
	WinoDy(a, d[0], d[1])
	if a[0][0] != 1 || a[1][0] != 3 || a[2][0] != -1 || a[3][0] != -2 {
		t.Errorf("WinoDy(1, 2) = %v, %v, %v, %v; want 1, 3, -1, -2", a[0][0], a[1][0], a[2][0], a[3][0])
	}
	WinoDy(a, d[0], []float32{0})
	if !math.Signbit(float64(a[3][0])) {
		t.Error("WinoDy's -q of +0 is +0, want -0")
	}
}

func BenchmarkWino(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 1 << 12
	var a, d [4][]float32
	for i := range a {
		a[i], d[i] = make([]float32, n), randSlice(r, n)
	}
	b.Run("in/go", func(b *testing.B) {
		for b.Loop() {
			winoInGo(a, d)
		}
	})
	b.Run("in", func(b *testing.B) {
		for b.Loop() {
			WinoIn(a, d)
		}
	})
	b.Run("out/go", func(b *testing.B) {
		for b.Loop() {
			winoOutGo(a[0], a[1], d)
		}
	})
	b.Run("out", func(b *testing.B) {
		for b.Loop() {
			WinoOut(a[0], a[1], d)
		}
	})
}
