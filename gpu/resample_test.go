package gpu

import (
	"math"
	"slices"
	"testing"
)

// TestResampleTaps checks the taps of a few axes against values worked
// by hand from PyTorch's upsample kernels (UpSample.h) and ONNX's Resize.
func TestResampleTaps(t *testing.T) {
	for _, tc := range []struct {
		a      ResampleAxis
		index  []int32
		weight []float32
	}{
		// bilinear, align_corners=False: x = (j+0.5)/2 - 0.5, clamped to
		// [0, 1] (output 3's 1.25 reads the last input alone).
		{ResampleAxis{In: 2, Out: 4, Mode: ResampleLinear, Coord: CoordPytorchHalfPixel},
			[]int32{0, 0, 1, 0, 1, 1}, []float32{1, 0.75, 0.25, 0.25, 0.75, 1}},
		// align_corners=True: x = j·2/3.
		{ResampleAxis{In: 3, Out: 4, Mode: ResampleLinear, Coord: CoordAlignCorners},
			[]int32{0, 0, 1, 1, 2, 2}, []float32{1, float32(1 - 2.0/3), float32(2.0 / 3), float32(1 - (4.0/3 - 1)), float32(4.0/3 - 1), 1}},
		// nn.Upsample(scale_factor=2, mode="nearest"): floor(j/2).
		{ResampleAxis{In: 3, Out: 6, Scale: 2, Mode: ResampleNearest, Coord: CoordAsymmetric, Nearest: NearestFloor},
			[]int32{0, 0, 1, 1, 2, 2}, []float32{1, 1, 1, 1, 1, 1}},
		// ONNX's default: half_pixel, round_prefer_floor; 4→2 reads x = 0.5
		// and 2.5, rounded down.
		{ResampleAxis{In: 4, Out: 2, Mode: ResampleNearest, Coord: CoordHalfPixel, Nearest: NearestRoundPreferFloor},
			[]int32{0, 2}, []float32{1, 1}},
		{ResampleAxis{In: 4, Out: 2, Mode: ResampleNearest, Coord: CoordHalfPixel, Nearest: NearestRoundPreferCeil},
			[]int32{1, 3}, []float32{1, 1}},
		// ceil past the end is clamped to the last input.
		{ResampleAxis{In: 2, Out: 3, Mode: ResampleNearest, Coord: CoordAsymmetric, Nearest: NearestCeil},
			[]int32{0, 1, 1}, []float32{1, 1, 1}},
	} {
		got, err := tc.a.Taps()
		if err != nil {
			t.Fatal(err)
		}
		if err := got.Check(); err != nil {
			t.Fatalf("%+v: %v", tc.a, err)
		}
		if !slices.Equal(got.Index, tc.index) || !slices.Equal(got.Weight, tc.weight) {
			t.Errorf("%+v: taps %v %v, want %v %v", tc.a, got.Index, got.Weight, tc.index, tc.weight)
		}
	}
}

// TestResampleTranspose checks that Transpose is the dense matrix's
// transpose and that Identity knows an unchanged axis.
func TestResampleTranspose(t *testing.T) {
	dense := func(m *ResampleTaps) [][]float32 {
		d := make([][]float32, m.Out)
		for j := range d {
			d[j] = make([]float32, m.In)
			for k := m.Start[j]; k < m.Start[j+1]; k++ {
				d[j][m.Index[k]] += m.Weight[k]
			}
		}
		return d
	}
	for _, a := range []ResampleAxis{
		{In: 5, Out: 12, Mode: ResampleLinear, Coord: CoordHalfPixel},
		{In: 12, Out: 5, Mode: ResampleNearest, Coord: CoordAsymmetric, Nearest: NearestFloor},
	} {
		m, err := a.Taps()
		if err != nil {
			t.Fatal(err)
		}
		tr := m.Transpose()
		if err := tr.Check(); err != nil {
			t.Fatal(err)
		}
		d, dt := dense(m), dense(tr)
		for j := range m.Out {
			for i := range m.In {
				if d[j][i] != dt[i][j] {
					t.Fatalf("%+v: (%d, %d) is %v, transposed %v", a, j, i, d[j][i], dt[i][j])
				}
			}
		}
		if m.Identity() {
			t.Errorf("%+v is not the identity", a)
		}
	}
	for _, a := range []ResampleAxis{
		{In: 6, Out: 6, Mode: ResampleNearest, Coord: CoordHalfPixel, Nearest: NearestRoundPreferFloor},
		{In: 6, Out: 6, Scale: 1, Mode: ResampleNearest, Coord: CoordAsymmetric, Nearest: NearestFloor},
		{In: 6, Out: 6, Mode: ResampleLinear, Coord: CoordAlignCorners},
		{In: 6, Out: 6, Mode: ResampleLinear, Coord: CoordPytorchHalfPixel},
	} {
		if m, _ := a.Taps(); !m.Identity() {
			t.Errorf("%+v: not the identity", a)
		}
	}
	if _, err := (ResampleAxis{In: 2, Out: 4, Mode: "area", Coord: CoordHalfPixel}).Taps(); err == nil {
		t.Error("area mode accepted")
	}
	if _, err := (ResampleAxis{In: 2, Out: 4, Mode: ResampleLinear, Coord: "tf_crop_and_resize"}).Taps(); err == nil {
		t.Error("tf_crop_and_resize accepted")
	}
}

// TestResampleCubicTaps checks bicubic taps against PyTorch's formulas
// (UpSample.h: cubic_convolution1 for the inner pair, cubic_convolution2
// for the outer, A = −0.75): ×2 half_pixel, output 1 reads x = 0.25 from
// inputs −1 to 2, the one at −1 clamped onto 0; with exclude_outside it is
// dropped and the other three renormalised.
func TestResampleCubicTaps(t *testing.T) {
	const A = -0.75
	conv1 := func(x float64) float64 { return ((A+2)*x-(A+3))*x*x + 1 }
	conv2 := func(x float64) float64 { return ((A*x-5*A)*x+8*A)*x - 4*A }
	r := 0.25
	w := []float64{conv2(r + 1), conv1(r), conv1(1 - r), conv2(2 - r)}
	for _, exclude := range []bool{false, true} {
		m, err := ResampleAxis{In: 3, Out: 6, Scale: 2, Mode: ResampleCubic, Coord: CoordHalfPixel, A: A, ExcludeOutside: exclude}.Taps()
		if err != nil {
			t.Fatal(err)
		}
		index, weight := []int32{0, 0, 1, 2}, []float32{float32(w[0]), float32(w[1]), float32(w[2]), float32(w[3])}
		if exclude {
			s := w[1] + w[2] + w[3]
			index, weight = index[1:], []float32{float32(w[1] / s), float32(w[2] / s), float32(w[3] / s)}
		}
		lo, hi := m.Start[1], m.Start[2]
		if !slices.Equal(m.Index[lo:hi], index) || !slices.Equal(m.Weight[lo:hi], weight) {
			t.Errorf("exclude_outside %v: output 1 taps %v %v, want %v %v", exclude, m.Index[lo:hi], m.Weight[lo:hi], index, weight)
		}
		// Each output's weights sum to 1 (an interpolation).
		for j := range m.Out {
			var sum float64
			for k := m.Start[j]; k < m.Start[j+1]; k++ {
				sum += float64(m.Weight[k])
			}
			if math.Abs(sum-1) > 1e-6 {
				t.Errorf("exclude_outside %v: output %d weights sum to %v", exclude, j, sum)
			}
		}
	}
}

// TestResampleFarCoordinates: a scale far from the sizes (a file's tiny
// float32 scale, 1e-44) maps outputs far past the input (x near 1e44,
// beyond float32); the taps stay finite weights on the input instead of
// infinities.
func TestResampleFarCoordinates(t *testing.T) {
	for _, mode := range []string{ResampleLinear, ResampleCubic, ResampleNearest} {
		m, err := ResampleAxis{In: 3, Out: 4, Scale: 1e-44, Mode: mode, Coord: CoordAsymmetric, Nearest: NearestFloor, A: -0.75}.Taps()
		if err != nil {
			t.Fatal(err)
		}
		for k, w := range m.Weight {
			if math.IsInf(float64(w), 0) || math.IsNaN(float64(w)) || m.Index[k] < 0 || m.Index[k] > 2 {
				t.Fatalf("%s: tap %d reads %d with weight %v", mode, k, m.Index[k], w)
			}
		}
	}
}

// TestResampleNewerCoordinates: tf_half_pixel_for_nn with nearest floor
// reads floor((j+0.5)/s) (PyTorch's nearest-exact), and
// half_pixel_symmetric centres the grid on the input: 5 by 1.5 is 7
// outputs (of the 7.5 the scale gives), the first reading input 0, the
// last input 4, mirrored in between.
func TestResampleNewerCoordinates(t *testing.T) {
	m, err := ResampleAxis{In: 7, Out: 3, Scale: 0.5, Mode: ResampleNearest, Coord: CoordTFHalfPixelNN, Nearest: NearestFloor}.Taps()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 3, 5}; !slices.Equal(m.Index, want) {
		t.Errorf("tf_half_pixel_for_nn: reads %v, want %v", m.Index, want)
	}
	m, err = ResampleAxis{In: 5, Out: 7, Scale: 1.5, Mode: ResampleLinear, Coord: CoordHalfPixelSym}.Taps()
	if err != nil {
		t.Fatal(err)
	}
	dense := make([][5]float64, m.Out)
	for j := range m.Out {
		for k := m.Start[j]; k < m.Start[j+1]; k++ {
			dense[j][m.Index[k]] += float64(m.Weight[k])
		}
	}
	if math.Abs(dense[0][0]-1) > 1e-6 || math.Abs(dense[6][4]-1) > 1e-6 {
		t.Errorf("half_pixel_symmetric: first row %v, last %v", dense[0], dense[6])
	}
	for j := range m.Out {
		for i := range 5 {
			if math.Abs(dense[j][i]-dense[m.Out-1-j][4-i]) > 1e-6 {
				t.Fatalf("half_pixel_symmetric: (%d, %d) is %v, its mirror %v", j, i, dense[j][i], dense[m.Out-1-j][4-i])
			}
		}
	}
}

// TestResampleAntialiasTaps checks an antialiased shrinking axis against
// PyTorch's loop (UpSampleKernel.cpp, compute_indices_weights_aa: center
// = (j+0.5)/s, support 1/s, the window from trunc(center − support + 0.5)
// clipped to the input, triangle weights normalised), which is ONNX's with
// exclude_outside; without it the taps past an end fall on the edge.
func TestResampleAntialiasTaps(t *testing.T) {
	const in, out = 11, 4
	s := float64(out) / in
	for _, exclude := range []bool{true, false} {
		m, err := ResampleAxis{In: in, Out: out, Mode: ResampleLinear, Coord: CoordHalfPixel, Antialias: true, ExcludeOutside: exclude}.Taps()
		if err != nil {
			t.Fatal(err)
		}
		for j := range out {
			want := make([]float64, in)
			center, support := (float64(j)+0.5)/s, 1/s
			xmin := max(int(center-support+0.5), 0)
			xmax := min(int(center+support+0.5), in)
			total := 0.0
			for i := xmin; i < xmax; i++ {
				w := max(0, 1-math.Abs((float64(i)-center+0.5)*s))
				want[i] += w
				total += w
			}
			if !exclude { // the window's taps past the ends, on the edges
				for i := int(math.Floor(center - 0.5 - support)); i < int(math.Ceil(center-0.5+support)); i++ {
					if w := max(0, 1-math.Abs((float64(i)-center+0.5)*s)); i < 0 || i >= in {
						want[min(max(i, 0), in-1)] += w
						total += w
					}
				}
			}
			got := make([]float64, in)
			for k := m.Start[j]; k < m.Start[j+1]; k++ {
				got[m.Index[k]] += float64(m.Weight[k])
			}
			for i := range in {
				if math.Abs(got[i]-want[i]/total) > 1e-6 {
					t.Fatalf("exclude_outside %v: output %d reads %v, want %v", exclude, j, got, want)
				}
			}
		}
	}
	if _, err := (ResampleAxis{In: 4, Out: 3, Scale: 1e-6, Mode: ResampleLinear, Coord: CoordAsymmetric, Antialias: true}).Taps(); err == nil {
		t.Error("an antialias filter far wider than the input accepted")
	}
}
