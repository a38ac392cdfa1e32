package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// convTranspose maps ConvTranspose of N×C×H×W (PyTorch's
// nn.ConvTranspose2d) to a convtranspose2d layer (solver.ConvTranspose2D):
// weight C×(Out/group)×kH×kW, optional bias, strides, group, dilations and
// output_padding. Pads that differ at the two ends (given, or derived from
// output_shape or auto_pad SAME_UPPER/SAME_LOWER as ONNX's formula does)
// become the layer's padding of the smaller end and a slice layer that
// crops the rest, which is the same: a transposed convolution's padding
// only removes output rows. A ConvTranspose of N×C×L (ConvTranspose1d) is
// the 1×k one of N×C×1×L, as Conv1d is.
func (im *importer) convTranspose(n *onnxpb.NodeProto, a attrs) error {
	x, w, b, a, rank, err := im.convOperands1D(n, a, liftConvT1D)
	if err != nil {
		return err
	}
	if len(w.dims) != 4 || x.rank != rank {
		return fmt.Errorf("%w: ConvTranspose with weight %v on input of rank %d (ConvTranspose2d of N×C×H×W or ConvTranspose1d of N×C×L only)",
			ErrUnsupported, w.dims, x.rank)
	}
	dil, a, err := dilations(a)
	if err != nil {
		return err
	}
	// output_shape and auto_pad decide the pads below; window reads the rest.
	outShape, autoPad := a.ints("output_shape"), a.str("auto_pad")
	rest := make(attrs, len(a))
	for k, v := range a {
		if k != "output_shape" && k != "auto_pad" {
			rest[k] = v
		}
	}
	k, s, p, asym, err := window(rest, w.dims[2:])
	if err != nil {
		return err
	}
	if k != [2]int{w.dims[2], w.dims[3]} {
		return fmt.Errorf("%w: kernel_shape %v, weight %v", ErrShape, k, w.dims)
	}
	var op [2]int
	if ops := a.ints("output_padding"); ops != nil {
		if len(ops) != 2 {
			return fmt.Errorf("%w: output_padding %v", ErrMalformed, ops)
		}
		for i, v := range ops {
			if op[i], err = limits.Extent("output_padding", v, false); err != nil {
				return fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
	}
	// pads as [top, left, bottom, right].
	pads := [4]int{p[0], p[1], p[0], p[1]}
	if asym != [4]int{} {
		pads = asym
	}
	switch autoPad {
	case "", "NOTSET":
	case "VALID":
		pads = [4]int{}
	case "SAME_UPPER", "SAME_LOWER":
		if outShape == nil {
			outShape = []int64{int64(x.shape.H * s[0]), int64(x.shape.W * s[1])}
		}
	default:
		return fmt.Errorf("%w: ConvTranspose auto_pad %q", ErrMalformed, autoPad)
	}
	if outShape != nil {
		if pads, err = convTPads(outShape, autoPad, [2]int{x.shape.H, x.shape.W}, k, s, dil, op); err != nil {
			return err
		}
	}
	groups, err := limits.Count("group", a.int("group", 1), true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if x.shape.C != w.dims[0] {
		return fmt.Errorf("%w: ConvTranspose weight %v on %d input channels", ErrShape, w.dims, x.shape.C)
	}
	out := w.dims[1] * groups
	// The layer pads the smaller end on both sides; the slice crops the rest.
	ph, pw := min(pads[0], pads[2]), min(pads[1], pads[3])
	d := models.Layer{Kind: "convtranspose2d", Name: im.layerName(n, w.name), Out: out, KH: k[0], KW: k[1], SH: s[0], SW: s[1],
		PH: ph, PW: pw, Groups: groups, NoBias: b == nil, OPH: op[0], OPW: op[1]}
	if dil != [2]int{1, 1} {
		d.DH, d.DW = dil[0], dil[1]
	}
	if b != nil {
		if err := floatParam(b, "bias", out); err != nil {
			return err
		}
		im.params[d.Name+".bias"] = b
	}
	im.params[d.Name+".weight"] = w
	if strings.HasPrefix(w.name, "onnx::") {
		im.folded++
	}
	crop := [4]int{pads[0] - ph, pads[1] - pw, pads[2] - ph, pads[3] - pw}
	if crop == [4]int{} {
		_, err = im.add(n, d, []*value{x}, rank)
		return err
	}
	y, err := im.push(d, []*value{x}, rank, nil)
	if err != nil {
		return err
	}
	yd := y.ldims()
	starts, steps, counts := make([]int, len(yd)), make([]int, len(yd)), slices.Clone(yd)
	for i := range steps {
		steps[i] = 1
	}
	// The spatial axes are the last two of C×H×W, the last one of C×L.
	axes := [][3]int{{len(yd) - 2, crop[0], crop[2]}, {len(yd) - 1, crop[1], crop[3]}}
	if rank == 3 {
		axes = axes[1:]
	}
	for _, ax := range axes {
		starts[ax[0]], counts[ax[0]] = ax[1], yd[ax[0]]-ax[1]-ax[2]
		if counts[ax[0]] <= 0 {
			return fmt.Errorf("%w: ConvTranspose pads %v leave no output of %v", ErrShape, pads, yd)
		}
	}
	return im.sliceLayer(n, n.GetOutput()[0], y, starts, steps, counts)
}

// convTPads returns ConvTranspose's pads [top, left, bottom, right] for an
// output_shape (the spatial sizes, or N, C and them), as ONNX defines
// them: the total padding is S·(in-1) + output_padding + (K-1)·D + 1 -
// output_shape, split in halves with the odd one at the end for SAME_UPPER
// and at the start otherwise. An output larger than the unpadded one would
// need negative padding and is refused.
func convTPads(shape []int64, autoPad string, in, k, s, d, op [2]int) ([4]int, error) {
	if len(shape) == 4 {
		shape = shape[2:]
	}
	if len(shape) != 2 {
		return [4]int{}, fmt.Errorf("%w: ConvTranspose output_shape %v", ErrMalformed, shape)
	}
	var pads [4]int
	for i, v := range shape {
		o, err := limits.Extent("output_shape", v, true)
		if err != nil {
			return pads, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		// In 64 bits (extents up to 2^24: products overflow 32-bit ints);
		// the total is at most the unpadded output, an extent once checked.
		total64 := int64(s[i])*int64(in[i]-1) + int64(op[i]) + int64(k[i]-1)*int64(d[i]) + 1 - int64(o)
		if total64 > limits.MaxExtent {
			return pads, fmt.Errorf("%w: ConvTranspose output of %d rows past the padding", ErrMalformed, total64)
		}
		total := int(total64)
		if total < 0 {
			return pads, fmt.Errorf("%w: ConvTranspose output_shape %v larger than the unpadded output (give output_padding instead)", ErrUnsupported, shape)
		}
		begin, end := total-total/2, total/2
		if autoPad == "SAME_UPPER" {
			begin, end = total/2, total-total/2
		}
		pads[i], pads[i+2] = begin, end
	}
	return pads, nil
}

// liftConvT1D is lift1D for ConvTranspose1d, whose output_padding [p] is
// [0, p] and output_shape [L] is [1, L] as well.
func liftConvT1D(a attrs) attrs {
	out := lift1D(a)
	for _, name := range []string{"output_padding", "output_shape"} {
		if at, ok := a[name]; ok && len(at.GetInts()) == 1 {
			first := int64(0)
			if name == "output_shape" {
				first = 1
			}
			out[name] = &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(),
				Ints: []int64{first, at.GetInts()[0]}}
		}
	}
	return out
}
