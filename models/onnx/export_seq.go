package onnx

import (
	"fmt"

	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
	"google.golang.org/protobuf/proto"
)

// The sequence layers, written as torch.onnx.export writes nn.Embedding,
// nn.LSTM and nn.GRU: Gather of the table by the ids, and one ONNX LSTM or
// GRU node per layer of a stack, batch first (layout 1, opset 14), with
// the weights in ONNX's gate order (LSTM i, o, f, c; GRU z, r, h) and
// GRU's linear_before_reset set (PyTorch's equations). A language model's
// input, the ids, is int64 batch×T; the PyTorch-named tensors
// (rnn.weight_ih_l0, ...) are kept as initializers beside the reordered
// W, R and B, so a PyTorch module loads its state_dict from the file.

// seqInput reports whether the network reads token ids: its first layer
// is an embedding of the input.
func seqInput(nodes []solver.Node) bool {
	if len(nodes) == 0 {
		return false
	}
	_, ok := nodes[0].Layer.(*solver.Embedding)
	return ok && (nodes[0].Inputs == nil || (len(nodes[0].Inputs) == 1 && nodes[0].Inputs[0] == solver.Input))
}

// sequence emits an embedding or a recurrent layer reading xs (of
// per-sample dims xd) and returns its output and dims; ok is false for
// other layers.
func (e *exporter) sequence(l solver.Layer, xs []string, xd [][]int) (y string, dims []int, ok bool, err error) {
	name := l.Name()
	switch l := l.(type) {
	case *solver.Embedding:
		ids := xs[0]
		if ids != "input" || !e.ids {
			ids = e.node("Cast", name+".ids", xs, attrInt("to", int(onnxpb.TensorProto_INT64)))
		}
		return e.node("Gather", name, []string{name + ".weight", ids}, attrInt("axis", 0)), []int{l.T, l.Dim}, true, nil
	case *solver.Recurrent:
		x := xs[0]
		if len(xd[0]) != 2 || xd[0][0] != l.T || xd[0][1] != l.In {
			x = e.ensure(x, xd[0], []int{l.T, l.In}, name+".in")
		}
		H, g := l.Hidden, 4
		op, order := "LSTM", []int{0, 3, 1, 2} // PyTorch i f g o → ONNX i o f c
		if l.Cell == solver.GRUCell {
			g, op, order = 3, "GRU", []int{1, 0, 2} // PyTorch r z n → ONNX z r h
		}
		var hn string
		for k := range l.Layers {
			in := l.In
			if k > 0 {
				in = H
			}
			pre := fmt.Sprintf("%s.l%d", name, k)
			get := func(t string) ([]float32, error) {
				v, ok := e.values[fmt.Sprintf("%s.%s_l%d", name, t, k)]
				if !ok {
					return nil, fmt.Errorf("onnx: export %s: no tensor %s_l%d", name, t, k)
				}
				return v, nil
			}
			wih, err := get("weight_ih")
			if err != nil {
				return "", nil, false, err
			}
			whh, err := get("weight_hh")
			if err != nil {
				return "", nil, false, err
			}
			bih, err := get("bias_ih")
			if err != nil {
				return "", nil, false, err
			}
			bhh, err := get("bias_hh")
			if err != nil {
				return "", nil, false, err
			}
			e.initializer(pre+".W", []int{1, g * H, in}, gates(wih, order, H*in))
			e.initializer(pre+".R", []int{1, g * H, H}, gates(whh, order, H*H))
			e.initializer(pre+".B", []int{1, 2 * g * H}, append(gates(bih, order, H), gates(bhh, order, H)...))
			attrs := []*onnxpb.AttributeProto{attrInt("hidden_size", H), attrInt("layout", 1)}
			if l.Cell == solver.GRUCell {
				attrs = append(attrs, attrInt("linear_before_reset", 1))
			}
			yAll, yLast := pre+".y", pre+".y_h"
			e.g.Node = append(e.g.Node, &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(pre),
				Input: []string{x, pre + ".W", pre + ".R", pre + ".B"}, Output: []string{yAll, yLast}, Attribute: attrs})
			// Y is batch×T×1×H (one direction), Y_h batch×1×H; the
			// steps are read on by the next layer, or are the output.
			if k+1 < l.Layers || l.AllSteps {
				e.intInit(pre+".axes", []int64{2})
				x = e.node("Squeeze", pre+".steps", []string{yAll, pre + ".axes"})
			}
			hn = yLast
		}
		if l.AllSteps {
			return x, []int{l.T, H}, true, nil
		}
		e.intInit(name+".last_axes", []int64{1})
		return e.node("Squeeze", name+".last", []string{hn, name + ".last_axes"}), []int{H}, true, nil
	}
	return "", nil, false, nil
}

// gates returns v, blocks of size elements each, in the given order of
// its blocks.
func gates(v []float32, order []int, size int) []float32 {
	out := make([]float32, 0, len(v))
	for _, q := range order {
		out = append(out, v[q*size:(q+1)*size]...)
	}
	return out
}
