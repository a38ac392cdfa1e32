package onnx

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// Language models: an embedding (Gather of a constant table by the int64
// ids the graph takes), LSTM and GRU (one direction, default activations,
// zero initial state), and the choice of one step (Gather of a constant
// index along the time axis), as torch.onnx.export writes nn.Embedding,
// nn.LSTM, nn.GRU (batch_first) and out[:, -1], and as cotrain's exporter
// writes them (export_seq.go).
//
// PyTorch writes the recurrence time-major (layout 0): a Transpose of the
// batch-first embedding to T×N×E before the LSTM and Transposes (with a
// Squeeze or a Reshape) of its T×1×N×H output back to N×T×H after it, and
// the zero initial state as a constant or an Expand of one to a shape
// computed from the input's. cotrain's networks keep the batch first, so
// batchFirst rewrites that pattern before the import: the recurrent node
// reads the embedding directly with layout 1, its output is squeezed to
// N×T×H under the name the transposes produced, and the nodes left without
// a reader (the transposes, the shape arithmetic of the initial state) are
// dropped.

// batchFirst rewrites every LSTM and GRU node of g that reads a time-major
// Transpose of a batch-first tensor into its batch-first form, and drops
// the nodes no longer needed for the graph's output. konst says whether a
// name is an initializer or a Constant of zeros (zero initial states).
func batchFirst(g *onnxpb.GraphProto, zero func(name string) bool) error {
	prod := map[string]*onnxpb.NodeProto{}
	readers := map[string][]*onnxpb.NodeProto{}
	for _, n := range g.GetNode() {
		for _, o := range n.GetOutput() {
			prod[o] = n
		}
		for _, i := range n.GetInput() {
			readers[i] = append(readers[i], n)
		}
	}
	perm := func(n *onnxpb.NodeProto) []int64 { return nodeAttrs(n).ints("perm") }
	changed := false
	var extra []*onnxpb.NodeProto
	for _, n := range g.GetNode() {
		if op := n.GetOpType(); op != "LSTM" && op != "GRU" {
			continue
		}
		a := nodeAttrs(n)
		if a.int("layout", 0) != 0 {
			continue
		}
		where := fmt.Sprintf("onnx: node %q (%s)", n.GetName(), n.GetOpType())
		if len(n.GetInput()) == 0 {
			return fmt.Errorf("%s: %w: no input", where, ErrMalformed)
		}
		tr := prod[n.GetInput()[0]]
		if tr == nil || tr.GetOpType() != "Transpose" || !slices.Equal(perm(tr), []int64{1, 0, 2}) {
			return fmt.Errorf("%s: %w: a time-major input that is not a Transpose of a batch-first one (cotrain reads batch-first sequences)", where, ErrUnsupported)
		}
		// The initial states: absent, or zero however written.
		for i := 4; i < len(n.GetInput()); i++ {
			name := n.GetInput()[i]
			if name == "" {
				continue
			}
			if i == 4 || !zeroState(name, prod, zero) {
				return fmt.Errorf("%s: %w: a sequence length or a non-zero initial state (input %d)", where, ErrUnsupported, i)
			}
		}
		// Y (T×1×N×H) back to batch first: Squeeze then Transpose (the
		// TorchScript exporter), or Transpose, Reshape, Transpose (dynamo).
		y := n.GetOutput()[0]
		var last *onnxpb.NodeProto
		for _, r := range readers[y] {
			switch r.GetOpType() {
			case "Squeeze":
				for _, t := range readers[r.GetOutput()[0]] {
					if t.GetOpType() == "Transpose" && slices.Equal(perm(t), []int64{1, 0, 2}) {
						last = t
					}
				}
			case "Transpose":
				if !slices.Equal(perm(r), []int64{0, 2, 1, 3}) {
					break
				}
				for _, rs := range readers[r.GetOutput()[0]] {
					if rs.GetOpType() != "Reshape" {
						continue
					}
					for _, t := range readers[rs.GetOutput()[0]] {
						if t.GetOpType() == "Transpose" && slices.Equal(perm(t), []int64{1, 0, 2}) {
							last = t
						}
					}
				}
			}
		}
		if last == nil {
			return fmt.Errorf("%s: %w: its output is not transposed back to batch-first N×T×H", where, ErrUnsupported)
		}
		n.Input = slices.Clone(n.GetInput()[:min(len(n.GetInput()), 4)])
		n.Input[0] = tr.GetInput()[0]
		setAttrInt(n, "layout", 1)
		axes := n.GetName() + ".batch_first_axes"
		g.Initializer = append(g.Initializer, &onnxpb.TensorProto{Name: proto.String(axes),
			DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Dims: []int64{1}, Int64Data: []int64{2}})
		// The squeeze takes over the final transpose's output name; that
		// transpose and the nodes that fed only it fall away below.
		extra = append(extra, &onnxpb.NodeProto{OpType: proto.String("Squeeze"), Name: proto.String(n.GetName() + ".batch_first"),
			Input: []string{y, axes}, Output: []string{last.GetOutput()[0]}})
		last.Output = []string{last.GetOutput()[0] + ".replaced"}
		changed = true
	}
	if !changed {
		return nil
	}
	// The new squeezes go right after their recurrent node, then every node
	// that the graph output does not need is dropped.
	var nodes []*onnxpb.NodeProto
	for _, n := range g.GetNode() {
		nodes = append(nodes, n)
		for _, e := range extra {
			if e.GetInput()[0] == n.GetOutput()[0] {
				nodes = append(nodes, e)
			}
		}
	}
	need := map[string]bool{}
	for _, o := range g.GetOutput() {
		need[o.GetName()] = true
	}
	keep := make([]bool, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		for _, o := range nodes[i].GetOutput() {
			if need[o] {
				keep[i] = true
			}
		}
		if keep[i] {
			for _, in := range nodes[i].GetInput() {
				need[in] = true
			}
		}
	}
	g.Node = nil
	for i, n := range nodes {
		if keep[i] {
			g.Node = append(g.Node, n)
		}
	}
	return nil
}

// zeroState reports whether name is zeros: an all-zero initializer or
// Constant, or an Expand or ConstantOfShape of zero.
func zeroState(name string, prod map[string]*onnxpb.NodeProto, zero func(string) bool) bool {
	if zero(name) {
		return true
	}
	n := prod[name]
	if n == nil {
		return false
	}
	switch n.GetOpType() {
	case "Expand":
		return zeroState(n.GetInput()[0], prod, zero)
	case "Constant", "ConstantOfShape":
		at := nodeAttrs(n)["value"]
		if at == nil {
			return n.GetOpType() == "ConstantOfShape" // its default value is 0
		}
		t, err := decodeTensor(at.GetT(), nil)
		if err != nil {
			return false
		}
		for _, v := range t.floats {
			if v != 0 {
				return false
			}
		}
		for _, v := range t.ints {
			if v != 0 {
				return false
			}
		}
		return true
	}
	return false
}

// setAttrInt sets (or adds) the integer attribute name of n.
func setAttrInt(n *onnxpb.NodeProto, name string, v int64) {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			a.I = proto.Int64(v)
			return
		}
	}
	n.Attribute = append(n.Attribute, attrInt(name, int(v)))
}

// gatherOp maps Gather of a constant table by activations (an embedding)
// and Gather of one constant index along a per-sample axis of an
// activation (a step of a sequence); shapeOp takes the rest.
func (im *importer) gatherOp(n *onnxpb.NodeProto, a attrs) (bool, error) {
	data, err := im.get(n, 0)
	if err != nil {
		return true, err
	}
	idx, err := im.get(n, 1)
	if err != nil {
		return true, err
	}
	switch {
	case data.konst != nil && idx.act:
		t := data.konst
		if a.int("axis", 0) != 0 || len(t.dims) != 2 {
			return true, fmt.Errorf("%w: Gather of a constant of dims %v along axis %d (an embedding is a 2-D table, axis 0)", ErrUnsupported, t.dims, a.int("axis", 0))
		}
		if err := floatParam(t, "embedding table", -1); err != nil {
			return true, err
		}
		name := im.layerName(n, t.name)
		im.params[name+".weight"] = t
		v, err := im.push(models.Layer{Kind: "embedding", Name: name, Vocab: t.dims[0], Out: t.dims[1]}, []*value{idx}, 0, nil)
		if err != nil {
			return true, err
		}
		// The network sees T×1×E (what LSTM and GRU read); the logical dims
		// are the ids' with E after them, the same memory.
		v.dims, v.rank = append(slices.Clone(idx.ldims()), t.dims[1]), len(idx.ldims())+2
		im.vals[n.GetOutput()[0]] = v
		return true, nil
	case data.act && idx.konst != nil && idx.konst.ints != nil && len(idx.konst.dims) > 0 && isRange(idx.konst.ints):
		return true, im.gatherRange(n, data, a.int("axis", 0), idx.konst)
	case data.act && data.view != nil && idx.konst != nil && len(idx.konst.dims) == 0 && len(idx.konst.ints) == 1:
		return true, im.gatherView(n, data, a.int("axis", 0), idx.konst.ints[0])
	case data.act && idx.konst != nil && len(idx.konst.dims) == 0 && len(idx.konst.ints) == 1:
		xd := data.ldims()
		ax, err := sampleAxis(a.int("axis", 0), len(xd)+1, "Gather")
		if err != nil {
			return true, err
		}
		k := int(idx.konst.ints[0])
		if k < 0 {
			k += xd[ax]
		}
		if k < 0 || k >= xd[ax] {
			return true, fmt.Errorf("%w: Gather index %d of an axis of %d", ErrShape, idx.konst.ints[0], xd[ax])
		}
		starts, steps, counts := make([]int, len(xd)), make([]int, len(xd)), slices.Clone(xd)
		for i := range steps {
			steps[i] = 1
		}
		starts[ax], counts[ax] = k, 1
		name := im.layerName(n, "")
		v, err := im.push(models.Layer{Kind: "slice", Name: name, Dims: slices.Clone(xd), Starts: starts, Steps: steps, Counts: counts},
			[]*value{data}, 0, counts)
		if err != nil {
			return true, err
		}
		out := slices.Delete(slices.Clone(xd), ax, ax+1)
		if len(out) == 0 {
			return true, fmt.Errorf("%w: Gather to a tensor of the batch axis alone", ErrUnsupported)
		}
		w, err := im.view(v, out, name+".squeeze")
		if err == nil {
			im.vals[n.GetOutput()[0]] = w
		}
		return true, err
	}
	return false, nil
}

// recurrent maps a batch-first (layout 1) LSTM or GRU node of one
// direction, default activations, no clip and zero initial state to a
// recurrent layer; its weights are reordered from ONNX's gate order to
// PyTorch's (solver.Recurrent). Y (every step) or Y_h (the last) may be
// read, not both.
func (im *importer) recurrent(n *onnxpb.NodeProto, a attrs) error {
	op := n.GetOpType()
	if a.int("layout", 0) != 1 {
		return fmt.Errorf("%w: a time-major %s whose input is not a Transpose of a batch-first tensor", ErrUnsupported, op)
	}
	if d := a.str("direction"); d != "" && d != "forward" {
		return fmt.Errorf("%w: %s direction %q (forward only)", ErrUnsupported, op, d)
	}
	if a["activations"] != nil || a["clip"] != nil || a.int("input_forget", 0) != 0 {
		return fmt.Errorf("%w: %s with other activations, a clip or input_forget", ErrUnsupported, op)
	}
	cell, g, order := "lstm", 4, []int{0, 2, 3, 1} // ONNX i o f c → PyTorch i f g o: ONNX block of each PyTorch gate
	if op == "GRU" {
		cell, g, order = "gru", 3, []int{1, 0, 2} // ONNX z r h → PyTorch r z n
		if a.int("linear_before_reset", 0) != 1 {
			return fmt.Errorf("%w: GRU with linear_before_reset 0 (PyTorch's nn.GRU is 1)", ErrUnsupported)
		}
	}
	for i := 4; i < len(n.GetInput()); i++ {
		if n.GetInput()[i] != "" {
			return fmt.Errorf("%w: %s with a sequence length or an initial state (input %d)", ErrUnsupported, op, i)
		}
	}
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	H := int(a.int("hidden_size", 0))
	xd := x.ldims()
	if len(xd) != 2 || H <= 0 {
		return fmt.Errorf("%w: %s of an input of per-sample dims %v and %d hidden units (want T×features)", ErrShape, op, xd, H)
	}
	T, in := xd[0], xd[1]
	var w [3]*tensor
	for i, want := range []int{g * H * in, g * H * H, 2 * g * H} {
		if w[i], err = im.konst(n, i+1, i == 2); err != nil {
			return err
		}
		if w[i] == nil { // no bias: zeros
			w[i] = &tensor{floats: make([]float32, want), dims: []int{1, want}}
		}
		if err := floatParam(w[i], op+" weight", want); err != nil {
			return err
		}
	}
	yAll, yLast := n.GetOutput()[0], ""
	if len(n.GetOutput()) > 1 {
		yLast = n.GetOutput()[1]
	}
	all, last := im.uses[yAll] > 0, yLast != "" && im.uses[yLast] > 0
	for _, o := range n.GetOutput()[min(len(n.GetOutput()), 2):] {
		if o != "" && im.uses[o] > 0 {
			return fmt.Errorf("%w: %s's cell state output is read", ErrUnsupported, op)
		}
	}
	if all == last {
		return fmt.Errorf("%w: %s with both or neither of Y and Y_h read", ErrUnsupported, op)
	}
	if x, err = im.view(x, []int{T, 1, in}, n.GetName()+".in"); err != nil {
		return err
	}
	name := im.layerName(n, "")
	pt := func(v []float32, size int) []float32 { return gates(v, order, size) }
	im.params[name+".weight_ih_l0"] = &tensor{floats: pt(w[0].floats, H*in), dims: []int{g * H, in}}
	im.params[name+".weight_hh_l0"] = &tensor{floats: pt(w[1].floats, H*H), dims: []int{g * H, H}}
	im.params[name+".bias_ih_l0"] = &tensor{floats: pt(w[2].floats[:g*H], H), dims: []int{g * H}}
	im.params[name+".bias_hh_l0"] = &tensor{floats: pt(w[2].floats[g*H:], H), dims: []int{g * H}}
	v, err := im.push(models.Layer{Kind: cell, Name: name, Out: H, Layers: 1, AllSteps: all}, []*value{x}, 0, nil)
	if err != nil {
		return err
	}
	out, dims := yLast, []int{1, H} // Y_h: N×1×H
	if all {
		out, dims = yAll, []int{T, 1, H} // Y: N×T×1×H
	}
	if v, err = im.view(v, dims, name+".out"); err != nil {
		return err
	}
	im.vals[out] = v
	return nil
}
