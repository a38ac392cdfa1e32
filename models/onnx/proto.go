package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// tensor is a constant: an initializer or a Constant node's value, as
// float32 (FLOAT) or int64 (INT64, INT32) data.
type tensor struct {
	name   string
	dims   []int
	floats []float32
	ints   []int64
}

func (t *tensor) size() int {
	n := 1
	for _, d := range t.dims {
		n *= d // decodeTensor checked the product
	}
	return n
}

// maxElems caps one constant's elements, so that a corrupt dimension cannot
// make the importer allocate without bound.
const maxElems = 1 << 30

// decodeTensor reads a TensorProto, its data from ext when it is external
// (external.go; a nil ext refuses external data). It refuses data types
// other than float32 and integers, and data that does not fill the dims.
func decodeTensor(p *onnxpb.TensorProto, ext *externalData) (*tensor, error) {
	t := &tensor{name: p.GetName()}
	n64, err := limits.Product64("tensor "+strconv.Quote(t.name), p.GetDims()...)
	if err != nil || n64 > maxElems {
		return nil, fmt.Errorf("%w: tensor %q has dimensions %v (at most %d elements)", ErrMalformed, t.name, p.GetDims(), maxElems)
	}
	n := int(n64)
	for _, d := range p.GetDims() {
		t.dims = append(t.dims, int(d))
	}
	raw := p.GetRawData()
	if p.GetDataLocation() == onnxpb.TensorProto_EXTERNAL || len(p.GetExternalData()) > 0 {
		width := 0
		switch onnxpb.TensorProto_DataType(p.GetDataType()) {
		case onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT32:
			width = 4
		case onnxpb.TensorProto_INT64:
			width = 8
		default:
			return nil, fmt.Errorf("%w: tensor %q of data type %s (float32 and integers only)",
				ErrUnsupported, t.name, onnxpb.TensorProto_DataType(p.GetDataType()))
		}
		size, err := limits.Bytes64("tensor "+strconv.Quote(t.name), n64, width)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if raw, err = ext.read(p, size); err != nil {
			return nil, err
		}
	}
	switch onnxpb.TensorProto_DataType(p.GetDataType()) {
	case onnxpb.TensorProto_FLOAT:
		if raw != nil {
			if len(raw) != 4*n {
				return nil, fmt.Errorf("%w: tensor %q: %d raw bytes for %d floats", ErrMalformed, t.name, len(raw), n)
			}
			t.floats = make([]float32, n)
			for i := range t.floats {
				t.floats[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		} else {
			t.floats = p.GetFloatData()
		}
		if len(t.floats) != n {
			return nil, fmt.Errorf("%w: tensor %q: %d floats for dims %v", ErrMalformed, t.name, len(t.floats), t.dims)
		}
	case onnxpb.TensorProto_INT64, onnxpb.TensorProto_INT32:
		width := 8
		if onnxpb.TensorProto_DataType(p.GetDataType()) == onnxpb.TensorProto_INT32 {
			width = 4
		}
		switch {
		case raw != nil:
			if len(raw) != width*n {
				return nil, fmt.Errorf("%w: tensor %q: %d raw bytes for %d integers", ErrMalformed, t.name, len(raw), n)
			}
			t.ints = make([]int64, n)
			for i := range t.ints {
				if width == 8 {
					t.ints[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
				} else {
					t.ints[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
				}
			}
		case width == 8:
			t.ints = p.GetInt64Data()
		default:
			for _, v := range p.GetInt32Data() {
				t.ints = append(t.ints, int64(v))
			}
		}
		if len(t.ints) != n {
			return nil, fmt.Errorf("%w: tensor %q: %d integers for dims %v", ErrMalformed, t.name, len(t.ints), t.dims)
		}
	default:
		return nil, fmt.Errorf("%w: tensor %q of data type %s (float32 and integers only)",
			ErrUnsupported, t.name, onnxpb.TensorProto_DataType(p.GetDataType()))
	}
	return t, nil
}

// scalar returns a one-element constant as a float64.
func (t *tensor) scalar() (float64, bool) {
	switch {
	case len(t.floats) == 1:
		return float64(t.floats[0]), true
	case len(t.ints) == 1:
		return float64(t.ints[0]), true
	}
	return 0, false
}

// attrs indexes a node's attributes by name.
type attrs map[string]*onnxpb.AttributeProto

func nodeAttrs(n *onnxpb.NodeProto) attrs {
	a := attrs{}
	for _, at := range n.GetAttribute() {
		a[at.GetName()] = at
	}
	return a
}

func (a attrs) int(name string, def int64) int64 {
	if at, ok := a[name]; ok {
		return at.GetI()
	}
	return def
}

func (a attrs) float(name string, def float32) float32 {
	if at, ok := a[name]; ok {
		return at.GetF()
	}
	return def
}

func (a attrs) ints(name string) []int64 {
	if at, ok := a[name]; ok {
		return at.GetInts()
	}
	return nil
}

func (a attrs) floats(name string) []float32 {
	if at, ok := a[name]; ok {
		return at.GetFloats()
	}
	return nil
}

func (a attrs) str(name string) string {
	if at, ok := a[name]; ok {
		return string(at.GetS())
	}
	return ""
}

// window reads the kernel, strides and pads of a 2-D Conv or pool node.
// ONNX pads are [top, left, bottom, right]; cotrain's layers pad both sides
// alike, so symmetric pads come back in p, and asymmetric ones (Caffe
// exports' [0 0 1 1]) in asym with p zero, for the caller to put in an
// explicit pad layer before the op (padBefore). Dilations and auto_pad are
// refused.
func window(a attrs, kernel []int) (k, s, p [2]int, asym [4]int, err error) {
	k, s, p, asym, err = windowAttrs(a, kernel)
	if err != nil {
		return k, s, p, asym, err
	}
	for _, d := range a.ints("dilations") {
		if d != 1 {
			return k, s, p, asym, fmt.Errorf("%w: dilations %v (export without dilated convolutions or pools)", ErrUnsupported, a.ints("dilations"))
		}
	}
	if ap := a.str("auto_pad"); ap != "" && ap != "NOTSET" && !(ap == "VALID" && p == [2]int{} && asym == [4]int{}) {
		return k, s, p, asym, fmt.Errorf("%w: auto_pad %s (give explicit pads)", ErrUnsupported, ap)
	}
	return k, s, p, asym, nil
}

// dilations reads a 2-D Conv's or pool's dilations (absent: 1 and 1) and
// returns the attributes without them, for window, which refuses them (an
// operator that has no dilated form).
func dilations(a attrs) ([2]int, attrs, error) {
	d := [2]int{1, 1}
	ds, ok := a["dilations"]
	if !ok {
		return d, a, nil
	}
	if len(ds.GetInts()) != 2 {
		return d, a, fmt.Errorf("%w: dilations %v (2-D only)", ErrMalformed, ds.GetInts())
	}
	for i, v := range ds.GetInts() {
		var err error
		if d[i], err = limits.Extent("dilations", v, true); err != nil {
			return d, a, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	rest := make(attrs, len(a))
	for k, v := range a {
		if k != "dilations" {
			rest[k] = v
		}
	}
	return d, rest, nil
}

func windowAttrs(a attrs, kernel []int) (k, s, p [2]int, asym [4]int, err error) {
	if ks := a.ints("kernel_shape"); ks != nil {
		if len(ks) != 2 {
			return k, s, p, asym, fmt.Errorf("%w: kernel_shape %v (2-D only)", ErrUnsupported, ks)
		}
		for i, v := range ks {
			if k[i], err = limits.Extent("kernel_shape", v, true); err != nil {
				return k, s, p, asym, fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
	} else if len(kernel) == 2 {
		k = [2]int{kernel[0], kernel[1]}
	} else {
		return k, s, p, asym, fmt.Errorf("%w: no 2-D kernel_shape", ErrMalformed)
	}
	s = [2]int{1, 1}
	if st := a.ints("strides"); st != nil {
		if len(st) != 2 {
			return k, s, p, asym, fmt.Errorf("%w: strides %v", ErrMalformed, st)
		}
		// A zero stride is refused, not read as ONNX's default of 1.
		for i, v := range st {
			if s[i], err = limits.Extent("strides", v, true); err != nil {
				return k, s, p, asym, fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
	}
	if ps := a.ints("pads"); ps != nil {
		if len(ps) != 4 {
			return k, s, p, asym, fmt.Errorf("%w: pads %v", ErrMalformed, ps)
		}
		for _, v := range ps {
			if _, err := limits.Extent("pads", v, false); err != nil {
				return k, s, p, asym, fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
		if ps[0] != ps[2] || ps[1] != ps[3] {
			asym = [4]int{int(ps[0]), int(ps[1]), int(ps[2]), int(ps[3])}
		} else {
			p = [2]int{int(ps[0]), int(ps[1])}
		}
	}
	return k, s, p, asym, nil
}
