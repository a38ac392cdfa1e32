package gputest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// ResampleAxes are resampling axes of every mode, coordinate
// transformation and rounding, up and down, by scales and by sizes: the
// conformance cases, and the layer tests' (solver).
func ResampleAxes() []gpu.ResampleAxis {
	return []gpu.ResampleAxis{
		{In: 5, Out: 10, Scale: 2, Mode: gpu.ResampleNearest, Coord: gpu.CoordAsymmetric, Nearest: gpu.NearestFloor},
		{In: 5, Out: 12, Mode: gpu.ResampleLinear, Coord: gpu.CoordHalfPixel},
		{In: 7, Out: 3, Mode: gpu.ResampleLinear, Coord: gpu.CoordAlignCorners},
		{In: 6, Out: 1, Mode: gpu.ResampleLinear, Coord: gpu.CoordPytorchHalfPixel},
		{In: 12, Out: 5, Mode: gpu.ResampleNearest, Coord: gpu.CoordHalfPixel, Nearest: gpu.NearestRoundPreferFloor},
		{In: 4, Out: 6, Scale: 1.5, Mode: gpu.ResampleNearest, Coord: gpu.CoordPytorchHalfPixel, Nearest: gpu.NearestRoundPreferCeil},
		{In: 3, Out: 7, Mode: gpu.ResampleNearest, Coord: gpu.CoordAlignCorners, Nearest: gpu.NearestCeil},
		{In: 9, Out: 4, Scale: 0.5, Mode: gpu.ResampleLinear, Coord: gpu.CoordAsymmetric},
		{In: 5, Out: 11, Mode: gpu.ResampleCubic, Coord: gpu.CoordHalfPixel, A: -0.75},
		{In: 8, Out: 3, Mode: gpu.ResampleCubic, Coord: gpu.CoordAlignCorners, A: -0.5, ExcludeOutside: true},
		{In: 5, Out: 7, Scale: 1.5, Mode: gpu.ResampleLinear, Coord: gpu.CoordHalfPixelSym},
		{In: 7, Out: 3, Scale: 0.5, Mode: gpu.ResampleNearest, Coord: gpu.CoordTFHalfPixelNN, Nearest: gpu.NearestFloor},
		{In: 11, Out: 4, Mode: gpu.ResampleLinear, Coord: gpu.CoordHalfPixel, Antialias: true, ExcludeOutside: true},
		{In: 9, Out: 2, Scale: 0.25, Mode: gpu.ResampleLinear, Coord: gpu.CoordAsymmetric, Antialias: true},
	}
}

// NaiveResample is Backend.Resample's definition, element by element, in
// its summation order.
func NaiveResample(d, s []float32, t *gpu.ResampleTaps, outer, inner int) {
	for o := range outer {
		for j := range t.Out {
			for i := range inner {
				var acc float32
				for k := t.Start[j]; k < t.Start[j+1]; k++ {
					acc += float32(t.Weight[k] * s[(o*t.In+int(t.Index[k]))*inner+i])
				}
				d[(o*t.Out+j)*inner+i] = acc
			}
		}
	}
}

// checkResample runs every case's matrix and its transpose (the backward
// pass's, with inputs that no output reads where the axis shrinks) through
// Resample along a last axis and a middle one, bit for bit against
// NaiveResample.
func checkResample(t *testing.T, b gpu.Backend) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, a := range ResampleAxes() {
		fwd, err := a.Taps()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []*gpu.ResampleTaps{fwd, fwd.Transpose()} {
			table := b.ResampleTable(m)
			for _, sh := range [][2]int{{3, 1}, {2, 6}} {
				outer, inner := sh[0], sh[1]
				src := Rand(r, outer*m.In*inner)
				want := make([]float32, outer*m.Out*inner)
				NaiveResample(want, src, m, outer, inner)
				dst := upload(b, Rand(r, len(want))) // every element overwritten
				b.Resample(dst, upload(b, src), table, outer, inner)
				exact(t, fmt.Sprintf("%+v %d→%d outer %d inner %d", a, m.In, m.Out, outer, inner), download(b, dst), want)
			}
		}
	}
}
