package onnx

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// knownOps are the operators node maps (or folds, for ConstantOfShape,
// Cast and Expand on constants). Import checks every node against it before any
// other work, so that a model with an operator cotrain lacks is refused
// with that operator and its node, not with whatever earlier problem the
// mapping would meet first. A case added to node's switch must be added
// here; TestKnownOpsAreMapped checks the other direction. The operators of
// gpu's operator table (gpu.UnaryOpONNX) are known too, without a line here.
var knownOps = map[string]bool{
	"Constant": true, "Identity": true, "Conv": true, "Clip": true, "MaxPool": true, "AveragePool": true,
	"GlobalAveragePool": true, "BatchNormalization": true, "Flatten": true, "Reshape": true, "Dropout": true,
	"Gemm": true, "MatMul": true, "Add": true, "Sub": true, "Mul": true, "Div": true, "Max": true, "Min": true, "ReduceMean": true,
	"ReduceSum": true, "ReduceMax": true, "GlobalMaxPool": true, "Transpose": true,
	"Split": true, "Slice": true, "Squeeze": true, "Unsqueeze": true, "Concat": true, "Softmax": true, "LogSoftmax": true,
	"Pad": true, "Shape": true, "Gather": true, "ConstantOfShape": true, "Cast": true, "Sum": true, "LRN": true, "PRelu": true,
	"LSTM": true, "GRU": true, "ConvTranspose": true, "Equal": true, "Where": true, "Tile": true, "Resize": true, "Upsample": true, "Expand": true, "Mod": true, "LayerNormalization": true, "InstanceNormalization": true, "GroupNormalization": true,
}

// checkOps refuses the first node whose operator (or domain) is not one
// node maps, naming it, the node's name and index, and what to do (advice).
// functions are the names of the model-local functions (the dynamo
// exporter's), whose calls are nodes too.
func checkOps(g *onnxpb.GraphProto, functions map[string]bool) error {
	for i, n := range g.GetNode() {
		d := n.GetDomain()
		_, inTable := gpu.UnaryOpONNX(n.GetOpType())
		if (knownOps[n.GetOpType()] || inTable) && (d == "" || d == "ai.onnx") {
			continue
		}
		name := n.GetName()
		if name == "" {
			name = "#" + strconv.Itoa(i)
		}
		where := fmt.Sprintf("onnx: node %q (#%d of %d, %s)", name, i, len(g.GetNode()), n.GetOpType())
		if functions[n.GetOpType()] {
			return fmt.Errorf("%s: %w operator %s: a model-local function, which cotrain does not inline: "+
				"export with torch.onnx.export(..., dynamo=False), or inline it with onnx.inliner.inline_local_functions",
				where, ErrUnsupported, n.GetOpType())
		}
		if d != "" && d != "ai.onnx" {
			return fmt.Errorf("%s: %w operator %s of domain %q: only the standard ONNX operators are read; "+
				"export with torch.onnx.export(..., dynamo=False) and without custom operators", where, ErrUnsupported, n.GetOpType(), d)
		}
		return fmt.Errorf("%s: %w operator %s%s", where, ErrUnsupported, n.GetOpType(), advice(n.GetOpType()))
	}
	return nil
}

// advice says what to do about an operator cotrain does not read.
func advice(op string) string {
	switch op {
	case "If", "Loop", "Scan":
		return ": control flow in the graph; export a model whose forward has no data-dependent Python " +
			"branches or loops (torch.onnx.export traces one path)"
	case "Einsum":
		return ": torch.einsum is not read (MaxViT's attention writes it); a model written with torch.matmul " +
			"and permute imports (MatMul, Transpose)"
	case "ScatterND":
		return ": not read yet (Swin's shifted-window attention builds its masks and windows with ScatterND; " +
			"ViT and ConvNeXt import)"
	case "ATen":
		return ": PyTorch wrote an operator it could not express in ONNX; export with a newer opset_version"
	}
	return ": not read yet (the operators Import reads are listed in its documentation, go doc " +
		"github.com/cotrain/cotrain/models/onnx.Import)"
}

// node maps one ONNX node. outName is the graph output, which decides
// whether a Softmax is the final one.
func (im *importer) node(n *onnxpb.NodeProto, outName string) error {
	if d := n.GetDomain(); d != "" && d != "ai.onnx" {
		return fmt.Errorf("%w operator %s of domain %q", ErrUnsupported, n.GetOpType(), d)
	}
	if len(n.GetOutput()) == 0 {
		return fmt.Errorf("%w: no outputs", ErrMalformed)
	}
	// Extra outputs (MaxPool's indices, Dropout's mask, training-mode
	// BatchNormalization's statistics) must not be used by anything.
	for _, o := range n.GetOutput()[1:] {
		if op := n.GetOpType(); o != "" && im.uses[o] > 0 && op != "Split" && op != "LSTM" && op != "GRU" { // recurrent: ops_seq.go
			return fmt.Errorf("%w: output %q is used; only the first output of a node may be", ErrUnsupported, o)
		}
	}
	a := nodeAttrs(n)
	if done, err := im.fold(n, a); done {
		return err
	}
	switch op := n.GetOpType(); op {
	case "Constant":
		return im.constant(n, a)
	case "Identity":
		v, err := im.get(n, 0)
		if err == nil {
			im.vals[n.GetOutput()[0]] = v
		}
		return err
	case "Conv":
		return im.conv(n, a)
	case "Clip":
		return im.clip(n, a)
	case "ConvTranspose":
		return im.convTranspose(n, a)
	case "Tile":
		return im.tile(n)
	case "Resize", "Upsample":
		return im.resize(n, a)
	case "Expand":
		// Of constants it is folded (fold.go); of an activation, expand.
		return im.expand(n)
	case "MaxPool", "AveragePool":
		return im.pool(n, a)
	case "GlobalAveragePool":
		return im.globalAvgPool(n)
	case "BatchNormalization":
		return im.batchNorm(n, a)
	case "Flatten":
		return im.flattenAt(n, a.int("axis", 1))
	case "Reshape":
		return im.reshapeTo(n, a)
	case "Dropout":
		return im.dropout(n, a)
	case "Gemm":
		return im.gemm(n, a)
	case "MatMul":
		return im.matmul(n)
	case "Add", "Sub", "Mul", "Div":
		return im.arith(n)
	case "Max", "Min":
		// Variadic in ONNX; two operands are the binary table's entry.
		if k := len(n.GetInput()); k != 2 {
			return fmt.Errorf("%w: %s of %d inputs (two are read: nest %s nodes, or torch.maximum/torch.minimum of two tensors)",
				ErrUnsupported, op, k, op)
		}
		return im.arith(n)
	case "Pow":
		// An exponent that is one constant number is the unary table's Pow;
		// an activation or a constant tensor, the binary table's.
		if y, err := im.get(n, 1); err == nil && (y.act || y.konst != nil && y.konst.floats != nil && y.konst.size() != 1) {
			return im.arith(n)
		}
		u, _ := gpu.UnaryOpONNX(op)
		return im.activation(n, a, u)
	case "Sum":
		return im.sumOp(n)
	case "LRN":
		return im.lrn(n, a)
	case "PRelu":
		return im.prelu(n)
	case "LayerNormalization":
		return im.layerNorm(n, a)
	case "InstanceNormalization", "GroupNormalization":
		return im.groupNorm(n, a)
	case "ReduceMean", "ReduceSum", "ReduceMax":
		return im.reduce(n, a)
	case "GlobalMaxPool":
		return im.globalMaxPool(n)
	case "Transpose":
		return im.transposeOp(n, a)
	case "Split":
		return im.splitOp(n, a)
	case "Slice":
		return im.sliceOp(n, a)
	case "Squeeze":
		return im.squeezeOp(n, a)
	case "Concat":
		return im.concat(n, a)
	case "Softmax", "LogSoftmax":
		return im.softmax(n, a, outName)
	case "Pad":
		return im.padOp(n, a)
	case "Unsqueeze":
		if x, err := im.get(n, 0); err == nil && x.act {
			return im.squeezeOp(n, a)
		}
		return im.shapeOp(n, a)
	case "LSTM", "GRU":
		return im.recurrent(n, a)
	case "Gather":
		if done, err := im.gatherOp(n, a); done {
			return err
		}
		return im.shapeOp(n, a)
	case "Shape":
		return im.shapeOp(n, a)
	case "Equal", "Where":
		return im.equalWhere(n)
	case "Mod":
		return im.mod(n, a)
	default:
		if u, ok := gpu.UnaryOpONNX(op); ok {
			return im.activation(n, a, u)
		}
		return fmt.Errorf("%w operator %s", ErrUnsupported, op)
	}
}

// floatParam checks that t is float data of the given number of elements.
func floatParam(t *tensor, what string, want int) error {
	if t.floats == nil {
		return fmt.Errorf("%w: %s %q is not float32", ErrUnsupported, what, t.name)
	}
	if want >= 0 && t.size() != want {
		return fmt.Errorf("%w: %s %q has dims %v, want %d elements", ErrShape, what, t.name, t.dims, want)
	}
	return nil
}

func (im *importer) constant(n *onnxpb.NodeProto, a attrs) error {
	at, ok := a["value"]
	var t *tensor
	switch {
	case ok && at.GetT() != nil:
		var err error
		if t, err = decodeTensor(at.GetT(), im.ext); err != nil {
			return err
		}
	case a["value_float"] != nil:
		t = &tensor{floats: []float32{a.float("value_float", 0)}}
	case a["value_int"] != nil:
		t = &tensor{ints: []int64{a.int("value_int", 0)}}
	case a["value_floats"] != nil:
		fs := a["value_floats"].GetFloats()
		t = &tensor{floats: fs, dims: []int{len(fs)}}
	case a["value_ints"] != nil:
		t = &tensor{ints: a.ints("value_ints"), dims: []int{len(a.ints("value_ints"))}}
	default:
		return fmt.Errorf("%w: Constant without a tensor, float or int value", ErrUnsupported)
	}
	t.name = n.GetOutput()[0]
	im.vals[t.name] = &value{konst: t}
	return nil
}

func (im *importer) unary(n *onnxpb.NodeProto, d models.Layer) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	d.Name = im.layerName(n, "")
	_, err = im.add(n, d, []*value{x}, x.rank)
	return err
}

// convOperands returns a Conv's or ConvTranspose's input (an activation),
// weight (a float constant) and optional bias (nil when absent).
func (im *importer) convOperands(n *onnxpb.NodeProto) (x *value, w, b *tensor, err error) {
	if x, err = im.act(n, 0); err != nil {
		return nil, nil, nil, err
	}
	if w, err = im.konst(n, 1, false); err != nil {
		return nil, nil, nil, err
	}
	if b, err = im.konst(n, 2, true); err != nil {
		return nil, nil, nil, err
	}
	if err = floatParam(w, "weight", -1); err != nil {
		return nil, nil, nil, err
	}
	return x, w, b, nil
}

// convOperands1D is convOperands with a 1-D operation's operands lifted:
// an N×C×L input (Conv1d, ConvTranspose1d) is the 1×k operation of
// N×C×1×L (ops_1d.go), its weight gains a unit axis and its attributes go
// through lift. rank is the input's rank in the file (4, or 3 when lifted).
func (im *importer) convOperands1D(n *onnxpb.NodeProto, a attrs, lift func(attrs) attrs) (x *value, w, b *tensor, _ attrs, rank int, err error) {
	if x, w, b, err = im.convOperands(n); err != nil {
		return nil, nil, nil, a, 0, err
	}
	if x.rank != 3 {
		return x, w, b, a, 4, nil
	}
	if x, err = im.as1D(x, n.GetInput()[0]); err != nil {
		return nil, nil, nil, a, 0, err
	}
	if w, err = weight1D(w); err != nil {
		return nil, nil, nil, a, 0, err
	}
	return x, w, b, lift(a), 3, nil
}

func (im *importer) conv(n *onnxpb.NodeProto, a attrs) error {
	x, w, b, a, rank, err := im.convOperands1D(n, a, lift1D)
	if err != nil {
		return err
	}
	if len(w.dims) != 4 || x.rank != rank {
		return fmt.Errorf("%w: weight %v on input of rank %d (2-D convolution only)", ErrUnsupported, w.dims, x.rank)
	}
	// Conv1d's dilation d was lifted to (1, d) with its other attributes.
	dil, a, err := dilations(a)
	if err != nil {
		return err
	}
	k, s, p, asym, err := window(a, w.dims[2:])
	if err != nil {
		return err
	}
	if asym != [4]int{} {
		// Zeros, as the convolution's own padding would add.
		if x, err = im.padBefore(n, x, asym, ""); err != nil {
			return err
		}
	}
	if k != [2]int{w.dims[2], w.dims[3]} {
		return fmt.Errorf("%w: kernel_shape %v, weight %v", ErrShape, k, w.dims)
	}
	// A group of 0 is refused, not read as ONNX's default of 1.
	groups, err := limits.Count("group", a.int("group", 1), true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	d := models.Layer{Kind: "conv2d", Name: im.layerName(n, w.name), Out: w.dims[0], KH: k[0], KW: k[1], SH: s[0], SW: s[1],
		PH: p[0] + x.pad[0], PW: p[1] + x.pad[1], Groups: groups, NoBias: b == nil}
	if dil != [2]int{1, 1} {
		d.Kind, d.DH, d.DW = "dilatedconv2d", dil[0], dil[1]
	}
	if b != nil {
		if err := floatParam(b, "bias", w.dims[0]); err != nil {
			return err
		}
		im.params[d.Name+".bias"] = b
	}
	im.params[d.Name+".weight"] = w
	if strings.HasPrefix(w.name, "onnx::") {
		im.folded++
	}
	_, err = im.add(n, d, []*value{x}, rank)
	return err
}

// clip maps Clip(0, 6) to ReLU6, Clip(0, +inf) to ReLU and any other bounds
// to a clip layer (ops_act.go); bounds are attributes before opset 11 and
// optional inputs from it.
func (im *importer) clip(n *onnxpb.NodeProto, a attrs) error {
	lo, hi := float64(a.float("min", float32(math.Inf(-1)))), float64(a.float("max", float32(math.Inf(1))))
	if im.opset >= 11 {
		lo, hi = math.Inf(-1), math.Inf(1)
		for i, dst := range []*float64{&lo, &hi} {
			t, err := im.konst(n, i+1, true)
			if err != nil {
				return err
			}
			if t != nil {
				v, ok := t.scalar()
				if !ok {
					return fmt.Errorf("%w: Clip bound %q is not a scalar", ErrShape, t.name)
				}
				*dst = v
			}
		}
	}
	switch {
	case lo == 0 && hi == 6:
		return im.unary(n, models.Layer{Kind: "relu6"})
	case math.IsInf(lo, -1) && hi == 6:
		// PyTorch's opset-9 ReLU6: Relu then Clip(max=6). Fuse them when the
		// Relu's output feeds only this Clip.
		x, err := im.act(n, 0)
		if err != nil {
			return err
		}
		last := len(im.layers) - 1
		if x.layer == last && last >= 0 && im.layers[last].Kind == "relu" && im.uses[n.GetInput()[0]] == 1 {
			im.layers[last].Kind = "relu6"
			im.vals[n.GetOutput()[0]] = x
			return nil
		}
	case lo == 0 && math.IsInf(hi, 1):
		return im.unary(n, models.Layer{Kind: "relu"})
	}
	return im.clipLayer(n, lo, hi)
}

func (im *importer) pool(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	rank := 4
	if x.rank == 3 {
		// MaxPool1d, AvgPool1d: a 1×k window over N×C×1×L (ops_1d.go).
		if x, err = im.as1D(x, n.GetInput()[0]); err != nil {
			return err
		}
		a, rank = lift1D(a), 3
	}
	if x.rank != rank {
		return fmt.Errorf("%w: pooling on an input of rank %d", ErrUnsupported, x.rank)
	}
	// MaxPool's dilations (opset 10 on) and AveragePool's (opset 19 on);
	// a 1-D pool's d was lifted to (1, d) with its other attributes.
	dil, a, err := dilations(a)
	if err != nil {
		return err
	}
	k, s, p, asym, err := window(a, nil)
	if err != nil {
		return err
	}
	if asym != [4]int{} && dil != [2]int{1, 1} && n.GetOpType() == "MaxPool" {
		// The edge padding below stands in for -inf only when every window
		// reaching into it also covers the border element it repeats,
		// which a dilated window can step over: dilatedMaxPoolAsym.
		return im.dilatedMaxPoolAsym(n, x, a, k, s, dil, asym, rank)
	}
	if asym != [4]int{} {
		// A max pool's padding never wins: edge padding repeats a border
		// value that every window reaching into the padding also covers
		// (ONNX pads are shorter than the kernel), so the maximum and the
		// element its gradient goes to are those of the unpadded input. An
		// average pool's zeros are right only when they count.
		mode := "edge"
		if n.GetOpType() == "AveragePool" {
			if a.int("count_include_pad", 0) == 0 {
				return fmt.Errorf("%w: AveragePool with asymmetric pads %v that does not count the padding (count_include_pad=0): "+
					"export with symmetric padding, or pad the input explicitly (F.pad) before the pool", ErrUnsupported, asym)
			}
			mode = ""
		}
		if x, err = im.padBefore(n, x, asym, mode); err != nil {
			return err
		}
	}
	d := models.Layer{Kind: "maxpool2d", Name: im.layerName(n, ""), KH: k[0], KW: k[1], SH: s[0], SW: s[1],
		PH: p[0], PW: p[1], Ceil: a.int("ceil_mode", 0) != 0}
	if dil != [2]int{1, 1} {
		d.DH, d.DW = dil[0], dil[1]
	}
	if n.GetOpType() == "AveragePool" {
		d.Kind, d.Incl = "avgpool2d", a.int("count_include_pad", 0) != 0
		if x.pad != [2]int{} {
			// A zero Pad before the pool: the zeros count in every window.
			if p != [2]int{} && !d.Incl {
				return fmt.Errorf("%w: a Pad before an AveragePool that pads without counting the padding", ErrUnsupported)
			}
			d.PH, d.PW, d.Incl = p[0]+x.pad[0], p[1]+x.pad[1], true
		}
	}
	_, err = im.add(n, d, []*value{x}, rank)
	return err
}

// dilatedMaxPoolAsym maps a dilated MaxPool whose pads differ at the two
// ends ([top, left, bottom, right] in asym, floor mode) to the pool padding
// the start pads on both sides in ceil mode, then a slice keeping ONNX's
// outputs: windows start where ONNX's do, a window past the input reads
// its taps there as padding (-inf, as ONNX's), and ceil mode makes at
// least ONNX's count of windows when the end pads exceed the start ones by
// less than the stride. Other geometries (ceil mode, whose last-window
// rule differs between opsets; a start pad over half the window; an end
// pad a stride or more past the start one) are refused, naming the pads.
func (im *importer) dilatedMaxPoolAsym(n *onnxpb.NodeProto, x *value, a attrs, k, s, dil [2]int, asym [4]int, rank int) error {
	refuse := func(why string) error {
		return fmt.Errorf("%w: MaxPool with dilations %v and asymmetric pads %v: %s (export with symmetric padding)", ErrUnsupported, dil, asym, why)
	}
	if a.int("ceil_mode", 0) != 0 {
		return refuse("in ceil mode")
	}
	in := [2]int{x.shape.H, x.shape.W}
	var want [2]int
	for i := range 2 {
		ek := (k[i]-1)*dil[i] + 1 // extents within limits: window checked them
		span := in[i] + asym[i] + asym[i+2] - ek
		if span < 0 {
			return refuse("a window larger than the padded input")
		}
		want[i] = span/s[i] + 1
	}
	d := models.Layer{Kind: "maxpool2d", Name: im.layerName(n, ""), KH: k[0], KW: k[1], SH: s[0], SW: s[1],
		PH: asym[0], PW: asym[1], Ceil: true, DH: dil[0], DW: dil[1]}
	if 2*d.PH > d.KH || 2*d.PW > d.KW {
		return refuse("a start pad over half the window")
	}
	y, err := im.push(d, []*value{x}, rank, nil)
	if err != nil {
		return err
	}
	if y.shape.H < want[0] || y.shape.W < want[1] {
		return refuse(fmt.Sprintf("%dx%d windows where ONNX has %dx%d", y.shape.H, y.shape.W, want[0], want[1]))
	}
	yd := y.ldims()
	starts, steps, counts := make([]int, len(yd)), make([]int, len(yd)), slices.Clone(yd)
	for i := range steps {
		steps[i] = 1
	}
	counts[len(yd)-1] = want[1]
	if rank == 4 {
		counts[len(yd)-2] = want[0]
	}
	return im.sliceLayer(n, n.GetOutput()[0], y, starts, steps, counts)
}

// padBefore adds an explicit pad layer of x (N×C×H×W) by ONNX's 2-D pads
// [top, left, bottom, right], with zeros (mode "") or the edge, for an op
// whose own padding is symmetric only; a pending Pad (padOp) of x is
// added to it. An N×C×L x (a 1-D op's, its pads lifted to [0, b, 0, e])
// is padded along L and viewed as C×1×L again (padBefore1D).
func (im *importer) padBefore(n *onnxpb.NodeProto, x *value, pads [4]int, mode string) (*value, error) {
	if x.is1D() && pads[0] == 0 && pads[2] == 0 {
		return im.padBefore1D(n, x, pads[1], pads[3], mode)
	}
	if x.rank != 4 {
		return nil, fmt.Errorf("%w: asymmetric pads %v on an input of rank %d", ErrUnsupported, pads, x.rank)
	}
	base := *x
	base.pad, base.padded = [2]int{}, nil
	if x.pad != [2]int{} {
		if mode != "" {
			// The pending zeros must stay zeros under the edge padding.
			var err error
			if x, err = im.materialize(x, n.GetInput()[0]); err != nil {
				return nil, err
			}
			base = *x
		} else {
			pads = [4]int{pads[0] + x.pad[0], pads[1] + x.pad[1], pads[2] + x.pad[0], pads[3] + x.pad[1]}
		}
	}
	name := n.GetName()
	if name == "" {
		name = strings.ToLower(n.GetOpType())
	}
	before, after := []int{0, pads[0], pads[1]}, []int{0, pads[2], pads[3]}
	d := models.Layer{Kind: "pad", Name: im.unique(name + ".pad"), Dims: base.ldims(), Before: before, After: after, Mode: mode}
	return im.push(d, []*value{&base}, 0, []int{base.shape.C, base.shape.H + pads[0] + pads[2], base.shape.W + pads[1] + pads[3]})
}

// padBefore1D is padBefore for an N×C×L x: b and e elements before and
// after along L (a Keras or TensorFlow export's "same" padding of an even
// kernel), then the padded C×L' viewed as C×1×L' for the 1-D op.
func (im *importer) padBefore1D(n *onnxpb.NodeProto, x *value, b, e int, mode string) (*value, error) {
	if x.pad != [2]int{} {
		// A pending zero Pad: applied first, under either mode.
		var err error
		if x, err = im.materialize(x, n.GetInput()[0]); err != nil {
			return nil, err
		}
	}
	name := n.GetName()
	if name == "" {
		name = strings.ToLower(n.GetOpType())
	}
	xd := x.ldims()
	d := models.Layer{Kind: "pad", Name: im.unique(name + ".pad"), Dims: xd, Before: []int{0, b}, After: []int{0, e}, Mode: mode}
	v, err := im.push(d, []*value{x}, 0, []int{xd[0], xd[1] + b + e})
	if err != nil {
		return nil, err
	}
	return im.as1D(v, name+".pad")
}

// lrn maps LRN (AlexNet's, CaffeNet's and GoogLeNet's local response
// normalization across channels) of N×C×H×W to an lrn layer; ONNX's
// defaults are alpha 1e-4, beta 0.75, bias 1.
func (im *importer) lrn(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	if x.rank != 4 {
		return fmt.Errorf("%w: LRN of a rank-%d tensor (N×C×H×W only)", ErrUnsupported, x.rank)
	}
	size, err := limits.Count("LRN size", a.int("size", 0), true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return im.unary(n, models.Layer{Kind: "lrn", Size: size, Alpha: a.float("alpha", 1e-4), Beta: a.float("beta", 0.75),
		K: a.float("bias", 1)})
}

func (im *importer) batchNorm(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	if x.rank == 3 {
		// BatchNorm1d of N×C×L: per channel, over N and L (ops_1d.go).
		if x, err = im.as1D(x, n.GetInput()[0]); err != nil {
			return err
		}
	}
	if x.rank != 4 && x.rank != 3 && x.rank != 2 {
		return fmt.Errorf("%w: BatchNormalization of a rank-%d tensor (N×C×H×W, N×C×L or N×F)", ErrUnsupported, x.rank)
	}
	if im.opset < 9 && a.int("spatial", 1) == 0 {
		// Opsets 7 and 8: spatial 0 normalises every element on its own.
		return fmt.Errorf("%w: BatchNormalization with spatial=0 (statistics per element, not per channel)", ErrUnsupported)
	}
	// training_mode (opset 14) only adds the running statistics as outputs,
	// which node refuses to see used; the layer normalises by the batch while
	// training and by the running statistics in evaluation either way.
	var ts [4]*tensor
	for i := range ts {
		if ts[i], err = im.konst(n, i+1, false); err != nil {
			return err
		}
		if err := floatParam(ts[i], "batch-norm input", x.shape.C); err != nil {
			return err
		}
	}
	// ONNX's momentum weighs the old running value; PyTorch's the new batch.
	d := models.Layer{Kind: "batchnorm", Name: im.layerName(n, ts[0].name), Eps: a.float("epsilon", 1e-5),
		Momentum: 1 - a.float("momentum", 0.9)}
	im.params[d.Name+".weight"], im.params[d.Name+".bias"] = ts[0], ts[1]
	im.state[d.Name+".running_mean"], im.state[d.Name+".running_var"] = ts[2], ts[3]
	_, err = im.add(n, d, []*value{x}, x.rank)
	return err
}

func (im *importer) flatten(n *onnxpb.NodeProto) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	if x.rank == 2 {
		im.vals[n.GetOutput()[0]] = x // already N×F
		return nil
	}
	_, err = im.add(n, models.Layer{Kind: "flatten", Name: im.layerName(n, "")}, []*value{x}, 2)
	return err
}

func (im *importer) dropout(n *onnxpb.NodeProto, a attrs) error {
	x, err := im.act(n, 0)
	if err != nil {
		return err
	}
	p := float64(a.float("ratio", 0.5))
	if im.opset >= 12 {
		p = 0.5
		if t, err := im.konst(n, 1, true); err != nil {
			return err
		} else if t != nil {
			v, ok := t.scalar()
			if !ok {
				return fmt.Errorf("%w: dropout ratio %q is not a scalar", ErrShape, t.name)
			}
			p = v
		}
	}
	_, err = im.add(n, models.Layer{Kind: "dropout", Name: im.layerName(n, ""), P: float32(p)}, []*value{x}, x.rank)
	return err
}
