package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
)

// Resize and Upsample map to a resample layer (solver.Resample) over the
// spatial axes of N×C×H×W or N×C×L (stored C×1×L, ops_1d.go), in mode
// nearest, linear or (Resize 11 on) cubic, with cubic_coeff_a and
// exclude_outside. What each opset gives:
//
//   - Upsample 7: scales as an attribute; 9: as input 1. Mode nearest or
//     linear ("bilinear" read as linear), asymmetric, nearest rounding
//     down (ONNX's version converter writes these when it lifts them).
//   - Resize 10: scales as input 1, the same semantics.
//   - Resize 11 to 19: roi (input 1, read only by tf_crop_and_resize, which
//     is refused), scales (2) or sizes (3), the attributes
//     coordinate_transformation_mode (half_pixel by default; also
//     tf_half_pixel_for_nn, TensorFlow's half-pixel nearest neighbour, and
//     opset 19's half_pixel_symmetric),
//     nearest_mode (round_prefer_floor) and, from 18, antialias, axes and
//     keep_aspect_ratio_policy.
//
// The batch and channel axes must keep their length (a scale of 1, or
// their size); antialias (a shrinking linear axis's filter stretched, as
// F.interpolate(antialias=True)) is read for linear mode, and refused
// while shrinking a cubic axis; so are a keep_aspect_ratio_policy other than stretch
// with sizes, and the transformation tf_crop_and_resize (TensorFlow's
// crop_and_resize, whose roi cotrain does not read).
func (im *importer) resize(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	r := len(x.ldims()) + 1
	if r != 4 && r != 3 {
		return fmt.Errorf("%w: %s of a rank-%d tensor (N×C×H×W and N×C×L are read)", ErrUnsupported, n.GetOpType(), r)
	}
	op := n.GetOpType()
	mode := a.str("mode")
	switch mode {
	case "":
		mode = gpu.ResampleNearest
	case "bilinear", "linear":
		if op == "Resize" && mode == "bilinear" {
			return fmt.Errorf("%w: Resize mode %q (nearest, linear or cubic)", ErrUnsupported, mode)
		}
		mode = gpu.ResampleLinear
	case gpu.ResampleNearest:
	case gpu.ResampleCubic:
		if op == "Upsample" {
			return fmt.Errorf("%w: Upsample mode %q (nearest or linear)", ErrUnsupported, mode)
		}
	default:
		return fmt.Errorf("%w: %s mode %q: nearest, linear and cubic are read", ErrUnsupported, op, mode)
	}
	coord, nearest := gpu.CoordAsymmetric, gpu.NearestFloor
	var scales []float64 // one per axis of the rank-r tensor, or nil
	var sizes []int64    // the same, or nil; batchDim stands for the batch
	switch {
	case op == "Upsample" && im.opset < 9:
		for _, s := range a.floats("scales") {
			scales = append(scales, float64(s))
		}
	case op == "Upsample" || im.opset < 11:
		if scales, err = im.floatsInput(n, 1); err != nil {
			return err
		}
	default:
		coord = a.str("coordinate_transformation_mode")
		if coord == "" {
			coord = gpu.CoordHalfPixel
		}
		if nearest = a.str("nearest_mode"); nearest == "" {
			nearest = gpu.NearestRoundPreferFloor
		}
		switch coord {
		case gpu.CoordHalfPixel, gpu.CoordPytorchHalfPixel, gpu.CoordAlignCorners, gpu.CoordAsymmetric,
			gpu.CoordTFHalfPixelNN, gpu.CoordHalfPixelSym:
		default:
			return fmt.Errorf("%w: Resize coordinate_transformation_mode %q (half_pixel, pytorch_half_pixel, align_corners, "+
				"asymmetric, tf_half_pixel_for_nn and half_pixel_symmetric are read; PyTorch's F.interpolate exports the first four)",
				ErrUnsupported, coord)
		}
		if scales, err = im.floatsInput(n, 2); err != nil {
			return err
		}
		if sizes, err = im.sizesInput(n, 3); err != nil {
			return err
		}
		if len(scales) > 0 && len(sizes) > 0 {
			return fmt.Errorf("%w: Resize with both scales %v and sizes %v", ErrMalformed, scales, sizes)
		}
		if len(scales) == 0 {
			scales = nil
		}
		if axes := a.ints("axes"); axes != nil {
			if scales, sizes, err = resizeAxes(axes, scales, sizes, x, r); err != nil {
				return err
			}
		}
		if p := a.str("keep_aspect_ratio_policy"); p != "" && p != "stretch" && sizes != nil {
			return fmt.Errorf("%w: Resize keep_aspect_ratio_policy %q (stretch only: give the output sizes themselves)", ErrUnsupported, p)
		}
	}
	if scales == nil && sizes == nil {
		return fmt.Errorf("%w: %s without scales or sizes", ErrMalformed, op)
	}
	if (scales != nil && len(scales) != r) || (sizes != nil && len(sizes) != r) {
		return fmt.Errorf("%w: %s of a rank-%d tensor by scales %v, sizes %v", ErrShape, op, r, scales, sizes)
	}
	xd := x.ldims()
	// The batch and channels must stay; the spatial axes get their scale
	// (as a float32, as the model holds it) or their size.
	var sc []float32
	out := slices.Clone(xd)
	if scales != nil {
		if scales[0] != 1 || scales[1] != 1 {
			return fmt.Errorf("%w: %s scales %v change the batch or the channels (only the spatial axes are resized)", ErrUnsupported, op, scales)
		}
		for _, s := range scales[2:] {
			if f := float32(s); !(f > 0) || math.IsInf(float64(f), 0) {
				return fmt.Errorf("%w: %s scale %v", ErrMalformed, op, s)
			}
			sc = append(sc, float32(s))
		}
		if out, err = solver.ResampleOut(xd, sc); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrShape, op, err)
		}
	} else {
		// The batch entry is the batch: shape arithmetic's batchDim, or
		// the batch the model was exported with where the exporter folded
		// Shape(x) into a constant; the network's batch is the caller's.
		if sizes[1] != int64(xd[0]) {
			return fmt.Errorf("%w: Resize sizes %v change the channels from %d (only the spatial axes are resized)", ErrUnsupported, sizes, xd[0])
		}
		for k, s := range sizes[2:] {
			if s < 1 || s > maxDim {
				return fmt.Errorf("%w: Resize sizes %v", ErrMalformed, sizes)
			}
			out[k+1] = int(s)
		}
	}
	antialias := a.int("antialias", 0) != 0 && mode != gpu.ResampleNearest // nearest ignores it
	if antialias && mode == gpu.ResampleCubic {
		for k := 1; k < len(xd); k++ {
			if out[k] < xd[k] {
				return fmt.Errorf("%w: Resize cubic with antialias=1 while shrinking %v to %v (linear's is read; "+
					"export with antialias=False)", ErrUnsupported, xd, out)
			}
		}
		antialias = false // growing: no filter to stretch
	}
	name := im.layerName(n, "")
	in, dims := xd, out
	if r == 3 {
		// N×C×L as C×1×L: the height axis of one element stays.
		if x, err = im.as1D(x, name+".in"); err != nil {
			return err
		}
		in, dims = []int{xd[0], 1, xd[1]}, []int{out[0], 1, out[1]}
		if sc != nil {
			sc = []float32{1, sc[0]}
		}
	}
	d := models.Layer{Kind: "resample", Name: name, Dims: slices.Clone(in), To: slices.Clone(dims), Mode: mode,
		Coord: coord, Scales: sc}
	switch mode {
	case gpu.ResampleNearest:
		d.Nearest = nearest // read in nearest mode alone; kept out of the others' description
	case gpu.ResampleCubic:
		d.CubicA, d.Exclude = a.float("cubic_coeff_a", -0.75), a.int("exclude_outside", 0) != 0
	case gpu.ResampleLinear:
		if antialias {
			d.AntiAl, d.Exclude = true, a.int("exclude_outside", 0) != 0
		}
	}
	v, err := im.push(d, []*value{x}, 0, dims)
	if err != nil {
		return err
	}
	if r == 3 {
		u := *v
		u.rank, u.dims = 3, nil
		v = &u
	}
	im.vals[n.GetOutput()[0]] = v
	return nil
}

// maxDim bounds an output size of Resize (solver.Resample checks the
// product): the spatial limit.
const maxDim = 1 << 24

// floatsInput returns the float vector of input i (an initializer or a
// Constant), or nil when the optional input is absent or empty (Resize's
// scales when sizes are given).
func (im *importer) floatsInput(n *onnxpb.NodeProto, i int) ([]float64, error) {
	c, err := im.konst(n, i, true)
	if err != nil || c == nil {
		return nil, err
	}
	if c.floats == nil && c.size() > 0 {
		return nil, fmt.Errorf("%w: input %q must be a float vector", ErrUnsupported, n.GetInput()[i])
	}
	out := make([]float64, len(c.floats))
	for k, f := range c.floats {
		out[k] = float64(f)
	}
	return out, nil
}

// sizesInput returns Resize's sizes: a constant integer vector, or shape
// arithmetic whose batch entry is the batch (torch.onnx.export's
// Concat(Shape(x)[:2], [h, w])), which is kept as batchDim.
func (im *importer) sizesInput(n *onnxpb.NodeProto, i int) ([]int64, error) {
	if i >= len(n.GetInput()) || n.GetInput()[i] == "" {
		return nil, nil
	}
	v, err := im.get(n, i)
	if err != nil {
		return nil, err
	}
	switch {
	case v.konst != nil && (v.konst.ints != nil || v.konst.size() == 0):
		return v.konst.ints, nil
	case v.sym != nil:
		return v.sym, nil
	}
	return nil, fmt.Errorf("%w: Resize sizes %q must be a constant integer vector", ErrUnsupported, n.GetInput()[i])
}

// resizeAxes expands opset 18's scales or sizes for the listed axes
// (negative ones counting from the end) to every axis of x (rank r), the
// others unchanged.
func resizeAxes(axes []int64, scales []float64, sizes []int64, x *value, r int) ([]float64, []int64, error) {
	given := max(len(scales), len(sizes))
	if given != len(axes) {
		return nil, nil, fmt.Errorf("%w: Resize of %d values for axes %v", ErrShape, given, axes)
	}
	full := make([]int, r)
	for k := range full {
		full[k] = -1
	}
	for i, ax := range axes {
		if ax < 0 {
			ax += int64(r)
		}
		if ax < 0 || ax >= int64(r) || full[ax] >= 0 {
			return nil, nil, fmt.Errorf("%w: Resize axes %v for a rank-%d tensor", ErrShape, axes, r)
		}
		full[ax] = i
	}
	xd := append([]int64{batchDim}, int64s(x.ldims())...)
	var sc []float64
	var sz []int64
	for k, i := range full {
		switch {
		case scales != nil && i >= 0:
			sc = append(sc, scales[i])
		case scales != nil:
			sc = append(sc, 1)
		case i >= 0:
			sz = append(sz, sizes[i])
		default:
			sz = append(sz, xd[k])
		}
	}
	return sc, sz, nil
}
