package gpu

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/internal/limits"
)

// Resampling: ONNX Resize and Upsample, PyTorch's nn.Upsample and
// F.interpolate in modes nearest and (bi)linear.
//
// Both modes are separable: resizing H×W is resizing W, then H, each output
// element of one axis a weighted sum of at most two input elements of that
// axis. One axis's resampling is a sparse Out×In matrix (ResampleTaps, in
// compressed rows), and Backend.Resample applies such a matrix along the
// middle axis of a tensor read as outer×In×inner. The backward pass is the
// same kernel with the transposed matrix (Transpose): each input element's
// gradient is a gather of the output gradients that read it, in a fixed
// order, so the adjoint needs no scatter with atomics and has the same bits
// on every run.

// ResampleTaps is one axis's resampling as a sparse Out×In matrix in
// compressed rows: output j is Σ Weight[k]·input[Index[k]] over k from
// Start[j] to Start[j+1]-1, summed in that order.
type ResampleTaps struct {
	In, Out int
	Start   []int32 // Out+1 entries, from 0 to len(Index), not decreasing
	Index   []int32 // input positions, each in [0, In)
	Weight  []float32
}

// Check returns an error unless t is a well-formed matrix whose sizes fit
// the kernels' 32-bit indices.
func (t *ResampleTaps) Check() error {
	if t.In <= 0 || t.Out <= 0 || t.In > math.MaxInt32 || t.Out > math.MaxInt32 {
		return fmt.Errorf("%w: resample of %d to %d elements", ErrGeometry, t.In, t.Out)
	}
	if len(t.Start) != t.Out+1 || len(t.Index) != len(t.Weight) || len(t.Index) > math.MaxInt32 {
		return fmt.Errorf("%w: resample taps: %d starts, %d indices and %d weights for %d outputs", ErrGeometry,
			len(t.Start), len(t.Index), len(t.Weight), t.Out)
	}
	if t.Start[0] != 0 || int(t.Start[t.Out]) != len(t.Index) {
		return fmt.Errorf("%w: resample taps: starts run from %d to %d over %d taps", ErrGeometry, t.Start[0], t.Start[t.Out], len(t.Index))
	}
	for j := range t.Out {
		if t.Start[j+1] < t.Start[j] {
			return fmt.Errorf("%w: resample taps: start %d of output %d below the one before", ErrGeometry, t.Start[j+1], j+1)
		}
	}
	for k, i := range t.Index {
		if i < 0 || int(i) >= t.In {
			return fmt.Errorf("%w: resample taps: tap %d reads position %d of %d", ErrGeometry, k, i, t.In)
		}
	}
	return nil
}

// Transpose returns the adjoint In×Out matrix: row i holds, for every tap
// of t that reads input i, its output position and weight, in increasing
// output order (and tap order within an output). Resampling a gradient
// with it sums each input's share in that fixed order.
func (t *ResampleTaps) Transpose() *ResampleTaps {
	r := &ResampleTaps{In: t.Out, Out: t.In, Start: make([]int32, t.In+1),
		Index: make([]int32, len(t.Index)), Weight: make([]float32, len(t.Weight))}
	for _, i := range t.Index {
		r.Start[i+1]++
	}
	for i := range t.In {
		r.Start[i+1] += r.Start[i]
	}
	next := append([]int32(nil), r.Start[:t.In]...)
	for j := range t.Out {
		for k := t.Start[j]; k < t.Start[j+1]; k++ {
			i := t.Index[k]
			r.Index[next[i]], r.Weight[next[i]] = int32(j), t.Weight[k]
			next[i]++
		}
	}
	return r
}

// Identity reports whether t copies its input (one tap of weight 1 on
// output j's own position, for every j).
func (t *ResampleTaps) Identity() bool {
	if t.In != t.Out || len(t.Index) != t.Out {
		return false
	}
	for j := range t.Out {
		if t.Start[j] != int32(j) || t.Index[j] != int32(j) || t.Weight[j] != 1 {
			return false
		}
	}
	return true
}

// CheckResample panics unless dst holds outer×t.Out×inner and src
// outer×t.In×inner elements: the callers (solver's resample layer) size
// them from checked shapes, so a mismatch is a bug of ours.
func CheckResample(what string, t *ResampleTaps, dst, src Buffer, outer, inner int) {
	if outer < 0 || inner <= 0 || dst.Len() != outer*t.Out*inner || src.Len() != outer*t.In*inner {
		panic(fmt.Sprintf("gpu: %s: %d and %d elements for %d×(%d→%d)×%d", what, dst.Len(), src.Len(), outer, t.In, t.Out, inner))
	}
}

// Resample modes, coordinate transformations and nearest roundings: ONNX
// Resize's attribute values (opset 11 onward; Upsample and opset 10's
// Resize are asymmetric with nearest floor).
const (
	ResampleNearest = "nearest"
	ResampleLinear  = "linear"
	ResampleCubic   = "cubic"

	CoordHalfPixel        = "half_pixel"
	CoordPytorchHalfPixel = "pytorch_half_pixel"
	CoordAlignCorners     = "align_corners"
	CoordAsymmetric       = "asymmetric"
	CoordTFHalfPixelNN    = "tf_half_pixel_for_nn"
	CoordHalfPixelSym     = "half_pixel_symmetric"

	NearestRoundPreferFloor = "round_prefer_floor"
	NearestRoundPreferCeil  = "round_prefer_ceil"
	NearestFloor            = "floor"
	NearestCeil             = "ceil"
)

// ResampleAxis describes one axis of a Resize: In elements to Out, in Mode
// (ResampleNearest or ResampleLinear), the output position j mapped to the
// input coordinate x by Coord (with s the Scale, or Out/In when Scale is
// 0):
//
//	half_pixel          x = (j + 0.5)/s − 0.5
//	pytorch_half_pixel  the same, but x = 0 when Out is 1
//	align_corners       x = j·(In − 1)/(Out − 1), 0 when Out is 1
//	asymmetric          x = j/s
//	tf_half_pixel_for_nn  x = (j + 0.5)/s (TensorFlow's nearest with half-pixel centres)
//	half_pixel_symmetric  x = c·(1 − Out/(s·In)) + (j + 0.5)/s − 0.5, c = In/2 (opset 19)
//
// Nearest reads input round(x) (Nearest says how: ONNX's nearest_mode)
// clamped to [0, In−1]. Linear clamps x to [0, In−1] and blends inputs
// i0 = ⌊x⌋ and i0+1 (i0 again at the last input) with weights 1−λ and λ,
// λ = x − i0, a tap of weight 0 left out: ONNX's definition, whose reads
// past either end repeat the edge, and PyTorch's values (its kernel clamps
// below at 0 and reads the last input twice past the end). Cubic reads the
// four inputs from ⌊x⌋−1 to ⌊x⌋+2, clamped (the edge repeated, as ONNX and
// PyTorch's bicubic do), weighted by cubicCoeffs of x − ⌊x⌋. Coordinates
// are computed in float64 and the weights rounded to float32 once.
type ResampleAxis struct {
	In, Out int
	Scale   float64 // the scale as given (ONNX scales, PyTorch's scale_factor); 0 when sizes were given
	Mode    string
	Coord   string
	Nearest string // nearest's rounding; ignored in linear mode

	// Cubic mode: A is the cubic coefficient (ONNX's cubic_coeff_a,
	// PyTorch's −0.75), and ExcludeOutside drops the taps outside the
	// input and renormalises the others (ONNX's exclude_outside; in linear
	// mode it applies to Antialias's taps).
	A              float64
	ExcludeOutside bool
	// Antialias (ONNX's antialias, PyTorch's F.interpolate(antialias=True))
	// stretches a linear axis's triangle filter by 1/s where it shrinks
	// (s < 1): output j blends every input i with |i − x| < 1/s, weighted
	// 1 − |i − x|·s and normalised to sum 1; inputs past the ends repeat
	// the edge, or with ExcludeOutside are dropped (PyTorch's: it clips
	// the window to the input). A growing axis is plain linear.
	Antialias bool
}

// Taps returns the axis's matrix, or an error naming the attribute value
// it does not know.
func (a ResampleAxis) Taps() (*ResampleTaps, error) {
	if a.In <= 0 || a.Out <= 0 || a.In > limits.MaxExtent || a.Out > limits.MaxExtent {
		return nil, fmt.Errorf("%w: resample of %d to %d elements", ErrGeometry, a.In, a.Out)
	}
	s := a.Scale
	if s == 0 {
		s = float64(a.Out) / float64(a.In)
	}
	if !(s > 0) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("%w: resample scale %v", ErrGeometry, a.Scale)
	}
	var coord func(j int) float64
	switch a.Coord {
	case CoordHalfPixel:
		coord = func(j int) float64 { return (float64(j)+0.5)/s - 0.5 }
	case CoordPytorchHalfPixel:
		coord = func(j int) float64 {
			if a.Out == 1 {
				return 0
			}
			return (float64(j)+0.5)/s - 0.5
		}
	case CoordAlignCorners:
		coord = func(j int) float64 {
			if a.Out == 1 {
				return 0
			}
			return float64(j) * float64(a.In-1) / float64(a.Out-1)
		}
	case CoordAsymmetric:
		coord = func(j int) float64 { return float64(j) / s }
	case CoordTFHalfPixelNN:
		coord = func(j int) float64 { return (float64(j) + 0.5) / s }
	case CoordHalfPixelSym:
		// The output's length as the scale gives it, against the whole
		// number of elements it has: the grid is centred on the input.
		adj := float64(a.Out) / (s * float64(a.In))
		off := float64(a.In) / 2 * (1 - adj)
		coord = func(j int) float64 { return off + (float64(j)+0.5)/s - 0.5 }
	default:
		return nil, fmt.Errorf("%w: resample coordinate transformation %q (half_pixel, pytorch_half_pixel, align_corners, "+
			"asymmetric, tf_half_pixel_for_nn or half_pixel_symmetric)", ErrGeometry, a.Coord)
	}
	t := &ResampleTaps{In: a.In, Out: a.Out, Start: make([]int32, a.Out+1)}
	switch a.Mode {
	case ResampleNearest:
		var round func(x float64) float64
		switch a.Nearest {
		case NearestRoundPreferFloor:
			round = func(x float64) float64 {
				if f := math.Floor(x); x-f == 0.5 {
					return f
				}
				return math.Round(x)
			}
		case NearestRoundPreferCeil:
			round = func(x float64) float64 { return math.Floor(x + 0.5) }
		case NearestFloor:
			round = math.Floor
		case NearestCeil:
			round = math.Ceil
		default:
			return nil, fmt.Errorf("%w: resample nearest_mode %q (round_prefer_floor, round_prefer_ceil, floor or ceil)", ErrGeometry, a.Nearest)
		}
		t.Index, t.Weight = make([]int32, a.Out), make([]float32, a.Out)
		for j := range a.Out {
			i := min(max(round(coord(j)), 0), float64(a.In-1))
			t.Start[j+1], t.Index[j], t.Weight[j] = int32(j+1), int32(i), 1
		}
	case ResampleLinear:
		if a.Antialias && s < 1 {
			if err := a.antialias(t, coord, s); err != nil {
				return nil, err
			}
			break
		}
		t.Index, t.Weight = make([]int32, 0, 2*a.Out), make([]float32, 0, 2*a.Out)
		for j := range a.Out {
			// Clamped to the input at both ends: past the last element
			// ONNX reads the edge repeated (and PyTorch the last element
			// twice, which is the same value), and a far coordinate (a tiny
			// scale from a file) must not make an infinite weight.
			x := min(max(coord(j), 0), float64(a.In-1))
			i0 := math.Floor(x)
			l := x - i0
			i1 := i0
			if i0 < float64(a.In-1) {
				i1++
			}
			// A tap of weight 0 adds nothing (but a NaN or an infinity of
			// the neighbour, which PyTorch would spread): it is left out,
			// so an axis that keeps its length is the identity.
			for _, tap := range [2]struct {
				i float64
				w float32
			}{{i0, float32(1 - l)}, {i1, float32(l)}} {
				if tap.w != 0 {
					t.Index, t.Weight = append(t.Index, int32(tap.i)), append(t.Weight, tap.w)
				}
			}
			t.Start[j+1] = int32(len(t.Index))
		}
	case ResampleCubic:
		t.Index, t.Weight = make([]int32, 0, 4*a.Out), make([]float32, 0, 4*a.Out)
		for j := range a.Out {
			x := coord(j)
			f := math.Floor(x)
			w := cubicCoeffs(x-f, a.A)
			sum := 0.0
			for k := range w {
				if i := f - 1 + float64(k); a.ExcludeOutside && (i < 0 || i > float64(a.In-1)) {
					w[k] = 0
				}
				sum += w[k]
			}
			for k := range w {
				if a.ExcludeOutside {
					w[k] /= sum
				}
				if wk := float32(w[k]); wk != 0 {
					i := min(max(f-1+float64(k), 0), float64(a.In-1))
					t.Index, t.Weight = append(t.Index, int32(i)), append(t.Weight, wk)
				}
			}
			t.Start[j+1] = int32(len(t.Index))
		}
	default:
		return nil, fmt.Errorf("%w: resample mode %q (nearest, linear or cubic)", ErrGeometry, a.Mode)
	}
	return t, nil
}

// cubicCoeffs are the weights of the four inputs around a coordinate at
// fraction r past the second (Keys' cubic convolution with coefficient a:
// ONNX Resize's cubic mode, PyTorch's bicubic with a = −0.75).
// Every product is rounded before the sum that follows (float64(...)), so
// no platform fuses them and the taps have the same bits everywhere.
func cubicCoeffs(r, a float64) [4]float64 {
	near := func(x float64) float64 { // ((a+2)·x − (a+3))·x·x + 1
		p := float64((a+2)*x) - (a + 3)
		p = float64(p * x)
		return float64(p*x) + 1
	}
	far := func(x float64) float64 { // ((a·x − 5a)·x + 8a)·x − 4a
		p := float64(a*x) - float64(5*a)
		p = float64(p*x) + float64(8*a)
		return float64(p*x) - float64(4*a)
	}
	return [4]float64{far(r + 1), near(r), near(1 - r), far(2 - r)}
}

// maxAntialiasTaps bounds the taps of an antialiased axis: about three per
// input element where the scale and the sizes agree (Out ≈ In·s outputs
// of about 2/s taps), but a graph description may give sizes and a scale
// that do not.
const maxAntialiasTaps = 1 << 28

// antialias fills t with the taps of a shrinking linear axis at scale s
// with Antialias set (see ResampleAxis).
func (a ResampleAxis) antialias(t *ResampleTaps, coord func(int) float64, s float64) error {
	support := 1 / s
	if win := 2*math.Ceil(support) + 1; win > float64(2*a.In+4) || win*float64(a.Out) > maxAntialiasTaps {
		return fmt.Errorf("%w: antialiased resample of %d to %d elements at scale %v: a filter of %v taps", ErrGeometry, a.In, a.Out, s, win)
	}
	in := float64(a.In)
	type tap struct {
		i int32
		w float64
	}
	taps := make([]tap, 0, int(2*math.Ceil(support)+1))
	for j := range a.Out {
		// Within half an element of the input (where every coordinate
		// transformation puts a shrinking axis's outputs), so that the
		// window holds an input of positive weight.
		x := min(max(coord(j), -0.5), in-0.5)
		taps, sum := taps[:0], 0.0
		for i := math.Floor(x-support) + 1; i < x+support; i++ {
			w := 1 - float64(math.Abs(i-x)*s) // rounded: no fused multiply-add
			if w <= 0 || (a.ExcludeOutside && (i < 0 || i >= in)) {
				continue
			}
			taps, sum = append(taps, tap{int32(min(max(i, 0), in-1)), w}), sum+w
		}
		for _, tp := range taps {
			if w := float32(tp.w / sum); w != 0 {
				t.Index, t.Weight = append(t.Index, tp.i), append(t.Weight, w)
			}
		}
		t.Start[j+1] = int32(len(t.Index))
	}
	return nil
}
