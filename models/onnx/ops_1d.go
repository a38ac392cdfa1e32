package onnx

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// 1-D models (PyTorch's Conv1d, MaxPool1d, AvgPool1d, BatchNorm1d and
// AdaptiveAvgPool1d(1) over N×C×L tensors) are imported as the 2-D layers
// with a height of one: an N×C×L activation is stored N×C×1×L, which is the
// same memory, a kernel of length k is 1×k, and stride s and pads [b, e]
// along L are stride 1×s and pads [0, b, 0, e]. Such a value has rank 3 and
// no structural dims (ldims gives C×L); a rank-3 value a structural layer
// made (a Transpose of N×L×C, an Unsqueeze of N×L) is viewed as C×1×L
// first (as1D), a copy only where its network shape differs. The exporter
// writes such a network back with 1-D operators (export.go, oneD).

// is1D reports whether v is an N×C×L activation stored as C×1×L.
func (v *value) is1D() bool { return v.rank == 3 && v.dims == nil }

// as1D returns the rank-3 activation v as C×1×L, for a layer that
// convolves, pools or normalises along L.
func (im *importer) as1D(v *value, name string) (*value, error) {
	if v.is1D() {
		return v, nil
	}
	d := v.ldims()
	w, err := im.view(v, []int{d[0], 1, d[1]}, name)
	if err != nil {
		return nil, err
	}
	u := *w
	u.rank, u.dims, u.padded = 3, nil, nil
	return &u, nil
}

// lift1D returns a node's 1-D window attributes as the 2-D ones of a 1×k
// window: kernel_shape [k] is [1, k], strides [s] [1, s], pads [b, e]
// [0, b, 0, e] and dilations [d] [1, d]. Attributes of another length are
// left as they are, for window to refuse.
func lift1D(a attrs) attrs {
	out := attrs{}
	for k, v := range a {
		out[k] = v
	}
	lift := func(name string, want int, to func(v []int64) []int64) {
		if at, ok := a[name]; ok && len(at.GetInts()) == want {
			out[name] = &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: to(at.GetInts())}
		}
	}
	one := func(v []int64) []int64 { return []int64{1, v[0]} }
	lift("kernel_shape", 1, one)
	lift("strides", 1, one)
	lift("dilations", 1, one)
	lift("pads", 2, func(v []int64) []int64 { return []int64{0, v[0], 0, v[1]} })
	return out
}

// weight1D returns a Conv1d weight O×(C/g)×k as the O×(C/g)×1×k of a 1×k
// convolution: the same values.
func weight1D(w *tensor) (*tensor, error) {
	if len(w.dims) != 3 {
		return nil, fmt.Errorf("%w: weight %q of dims %v on an N×C×L input, want O×C×k", ErrShape, w.name, w.dims)
	}
	u := *w
	u.dims = []int{w.dims[0], w.dims[1], 1, w.dims[2]}
	return &u, nil
}

// globalAvgPool maps GlobalAveragePool: over H×W of N×C×H×W, and over L
// of N×C×L (AdaptiveAvgPool1d(1)), whose N×C×1 output is rank 3.
func (im *importer) globalAvgPool(n *onnxpb.NodeProto) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	if x.rank == 3 {
		if x, err = im.as1D(x, n.GetInput()[0]); err != nil {
			return err
		}
	}
	_, err = im.add(n, models.Layer{Kind: "globalavgpool", Name: im.layerName(n, "")}, []*value{x}, x.rank)
	return err
}
