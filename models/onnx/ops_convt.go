package onnx

import (
	"fmt"
	"strings"

	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// convTranspose maps ConvTranspose of N×C×H×W (PyTorch's
// nn.ConvTranspose2d) to a convtranspose2d layer (solver.ConvTranspose2D):
// weight C×(Out/group)×kH×kW, optional bias, symmetric pads, strides,
// group and output_padding. Dilations other than 1, asymmetric pads,
// output_shape and auto_pad are refused, naming the attribute; so is a
// ConvTranspose of N×C×L (ConvTranspose1d).
func (im *importer) convTranspose(n *onnxpb.NodeProto, a attrs) error {
	x, w, b, err := im.convOperands(n)
	if err != nil {
		return err
	}
	if len(w.dims) != 4 || x.rank != 4 {
		return fmt.Errorf("%w: ConvTranspose with weight %v on input of rank %d (ConvTranspose2d of N×C×H×W only)", ErrUnsupported, w.dims, x.rank)
	}
	if _, ok := a["output_shape"]; ok {
		return fmt.Errorf("%w: ConvTranspose output_shape %v (give pads and output_padding; torch.onnx.export does)", ErrUnsupported, a.ints("output_shape"))
	}
	dil, a, err := dilations(a)
	if err != nil {
		return err
	}
	if dil != [2]int{1, 1} {
		return fmt.Errorf("%w: ConvTranspose dilations %v (export without dilated transposed convolutions)", ErrUnsupported, dil)
	}
	k, s, p, asym, err := window(a, w.dims[2:])
	if err != nil {
		return err
	}
	if asym != [4]int{} {
		return fmt.Errorf("%w: ConvTranspose asymmetric pads %v", ErrUnsupported, a.ints("pads"))
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
	groups, err := limits.Count("group", a.int("group", 1), true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if x.shape.C != w.dims[0] {
		return fmt.Errorf("%w: ConvTranspose weight %v on %d input channels", ErrShape, w.dims, x.shape.C)
	}
	out := w.dims[1] * groups
	d := models.Layer{Kind: "convtranspose2d", Name: im.layerName(n, w.name), Out: out, KH: k[0], KW: k[1], SH: s[0], SW: s[1],
		PH: p[0], PW: p[1], Groups: groups, NoBias: b == nil, OPH: op[0], OPW: op[1]}
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
	_, err = im.add(n, d, []*value{x}, 4)
	return err
}
