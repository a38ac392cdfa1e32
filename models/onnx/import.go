package onnx

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
	"google.golang.org/protobuf/proto"
)

// maxModelBytes caps what Import reads (protobuf's own limit is 2 GiB; a
// 32-bit build, whose ints stop one byte short of that, reads one byte less).
const maxModelBytes = min(1<<31, math.MaxInt-1)

// batchDim stands for the batch size in shape values (Shape, Gather, ...).
const batchDim = math.MinInt64

// value is what an ONNX name holds during the import: an activation (the
// output of one of our layers, or the network input), a constant, or a
// small integer vector computed from shapes (torch's x.view(x.size(0), -1)).
type value struct {
	act   bool
	layer int          // producing layer, solver.Input for the network input
	shape solver.Shape // per sample
	rank  int          // 4 (N×C×H×W), 3 (N×C×L, stored as C×1×L: ops_1d.go) or 2 (N×F, stored as F×1×1), or 1 + len(dims)
	pad   [2]int       // zero padding a Pad node left for the consumer
	// dims are the logical per-sample dims (rank-1 of them) when a
	// structural layer set them; nil means C×H×W for rank 4, F for rank 2
	// (ldims). shape is always solver.DimsShape of them: the network sees
	// the flat per-sample size, the importer the logical shape.
	dims   []int
	padded *value // the pad layer made for a pending pad (materialize)
	// view, when set, gives the ONNX axes of an activation whose batch axis
	// moved, each a list of factors (batchAxis, or a stored axis of dims):
	// views.go.
	view [][]int
	// bconst marks a constant (konst) expanded over the batch: the same
	// tensor for every sample (a class token before its Concat).
	bconst bool

	konst *tensor // a constant

	sym    []int64 // a shape vector; batchDim marks the batch size
	scalar bool    // sym holds one element of rank 0 (Gather's output)
}

// importer holds the state of one Import.
type importer struct {
	opset int64
	ext   *externalData // where external tensor data is read from; nil for none
	vals  map[string]*value
	uses  map[string]int // consumers of each name, graph outputs included
	// readers lists the nodes that read each name; a node in fused was
	// mapped together with an earlier one (ops_act.go) and is skipped.
	readers map[string][]*onnxpb.NodeProto
	fused   map[*onnxpb.NodeProto]bool
	layers  []models.Layer
	outs    []solver.Shape // output shape of each layer
	names   map[string]bool
	params  map[string]*tensor // "layer.weight" -> data
	state   map[string]*tensor
	notes   []string
	folded  int // convolutions whose weights have no module name
}

// Import reads an ONNX model as torch.onnx.export writes it (opsets 7 to 21,
// MinOpset to MaxOpset; tested with 9 to 20) and returns a weight file of model models.GraphModel. The
// operators it maps are Conv (dilated too, as a dilatedconv2d layer),
// ConvTranspose (ops_convt.go), Gemm, MatMul of two activations (a matmul layer),
// Tile and Expand of an activation (a tile layer, ops_struct.go), Resize and
// Upsample in modes nearest, linear and (Resize) cubic over N×C×H×W and N×C×L (a resample
// layer, ops_resize.go), MatMul by a
// constant (+Add of a bias: a linear layer, applied to the last axis at
// every position of a tensor of rank 3 or more, as nn.Linear is), Clip
// (any bounds; ReLU6 and ReLU where they are those), every elementwise
// operator of gpu's operator table (gpu.UnaryOpONNX: Relu, Sigmoid, Tanh,
// HardSigmoid, HardSwish, LeakyRelu, Elu, Selu, Softplus, Softsign, Exp,
// Neg, Abs, Sqrt, Reciprocal, Erf, Log, Gelu (not approximate="tanh"), and
// Pow with a constant scalar exponent; x·Sigmoid(x) and x·HardSigmoid(x)
// become one SiLU or HardSwish layer, and GELU as PyTorch writes it before
// opset 20, x·0.5·(1 + Erf(x/√2)), imports as its Erf and arithmetic), PRelu
// (one slope, or one per channel: a prelu layer whose slopes train),
// LayerNormalization (a layernorm layer whose scale and bias train),
// InstanceNormalization and GroupNormalization (a groupnorm layer whose
// per-channel scale and bias train; opset 18's per-group ones are given to
// each channel),
// Softmax and LogSoftmax, MaxPool, AveragePool (asymmetric pads
// on these and on Conv become an explicit pad layer before them), Sum of
// any number of activations, LRN, GlobalAveragePool (Conv, MaxPool,
// AveragePool, BatchNormalization and GlobalAveragePool of N×C×L inputs
// too, as 1×k windows: ops_1d.go),
// BatchNormalization, Dropout, Identity, Constant, and the structural
// operators (ops_struct.go): the binary operator table's (gpu/binops.go:
// Add, Sub, Mul, Div, and Max, Min of two inputs, Pow whose exponent is an
// activation or a constant tensor) with numpy broadcasting between two
// activations or with a float constant,
// ReduceMean and ReduceSum over any per-sample axes, ReduceMax and
// GlobalMaxPool over the spatial axes, Reshape (0 and -1 entries, the batch
// first), Transpose keeping the batch first, Split, Slice with positive
// steps, Squeeze, Unsqueeze, Flatten at axis 1, Concat of any number of
// inputs on any per-sample axis, and Pad with zeros (folded into a
// following Conv or AveragePool where it can be), another constant,
// reflection or the edge. Integer shape arithmetic
// (Shape, Gather, Unsqueeze, Concat, Add/Sub/Mul/Div/Max/Min of integers,
// multiples of the batch size included, Equal and Where of shape vectors,
// Mod of integer constants) and
// chains of constants (ConstantOfShape, Cast, Reshape, Slice, Transpose, as
// torch writes F.pad's pads) are evaluated during the import. Vision
// transformers (views.go): a Transpose or Reshape that moves the batch axis
// or folds another into it (nn.MultiheadAttention's) is a view that the
// row-wise operators after it read as it is; a constant Expand'ed over the
// batch and concatenated before an activation (the class token) is a
// prepend layer, Add of a learned tensor of the sample's shape (the
// position embedding) an addparam layer, and Mul by a learned tensor of
// the activation's rank (ConvNeXt's layer scale) a scaleparam layer, all
// trained. An export at a static batch of 1 is read with its leading 1 as
// the batch (docs/onnx.md, "Vision transformers and ConvNeXt"). A Softmax or
// LogSoftmax at the very end is dropped, because cotrain's networks output
// logits (the loss applies the softmax); the file's Meta says so; any other
// Softmax is a layer, any other LogSoftmax a softmax layer and a log layer.
// Language models (ops_seq.go): int64 token ids in, Gather of a constant
// table (an embedding), LSTM and GRU (one direction, zero initial state;
// PyTorch's time-major pattern is rewritten batch first), and Gather of one
// step. Any other operator is an error naming it and its node.
//
// A model whose tensors keep their data in external files (today's
// torch.onnx.export writes model.onnx.data beside model.onnx) is read with
// ImportFile; Import refuses it, naming the file it would need.
func Import(r io.Reader) (*models.File, error) {
	return importModel(r, nil)
}

// ImportFile is Import of the ONNX file at path, reading the external data
// files its tensors name from the model's own folder only (external.go): a
// location that is absolute, has a ".." element or leads out of the folder
// through a symbolic link is refused, naming it.
func ImportFile(path string) (*models.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	defer fh.Close()
	dir := filepath.Dir(path)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("onnx: the model's folder: %w", err)
	}
	defer root.Close()
	ext := &externalData{root: root, dir: dir}
	defer ext.close()
	return importModel(fh, ext)
}

// zeroInitializer returns whether a name is an initializer of g holding
// zeros only (a zero initial state, ops_seq.go).
func zeroInitializer(g *onnxpb.GraphProto, ext *externalData) func(string) bool {
	return func(name string) bool {
		for _, p := range g.GetInitializer() {
			if p.GetName() != name {
				continue
			}
			t, err := decodeTensor(p, ext)
			if err != nil {
				return false
			}
			for _, v := range t.floats {
				if v != 0 {
					return false
				}
			}
			return t.ints == nil
		}
		return false
	}
}

// MinOpset and MaxOpset bound the default-domain opsets Import reads.
const (
	MinOpset = 7
	MaxOpset = 21
)

func importModel(r io.Reader, ext *externalData) (*models.File, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxModelBytes+1))
	if err != nil {
		return nil, fmt.Errorf("onnx: read: %w", err)
	}
	if len(raw) > maxModelBytes {
		return nil, fmt.Errorf("%w: larger than 2 GiB", ErrMalformed)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	g := m.GetGraph()
	if g == nil || len(g.GetNode()) == 0 {
		return nil, fmt.Errorf("%w: no graph (is this an ONNX file?)", ErrMalformed)
	}
	im := &importer{vals: map[string]*value{}, uses: map[string]int{}, names: map[string]bool{},
		readers: map[string][]*onnxpb.NodeProto{}, fused: map[*onnxpb.NodeProto]bool{},
		params: map[string]*tensor{}, state: map[string]*tensor{}, ext: ext}
	for _, op := range m.GetOpsetImport() {
		if d := op.GetDomain(); d == "" || d == "ai.onnx" {
			im.opset = op.GetVersion()
		}
	}
	switch {
	case im.opset < MinOpset:
		return nil, fmt.Errorf("%w: opset %d is older than %d, the oldest read (%d to %d are): export again with "+
			"torch.onnx.export(..., opset_version=13), or upgrade the file with "+
			"onnx.version_converter.convert_version(onnx.load(FILE), 13)", ErrUnsupported, im.opset, MinOpset, MinOpset, MaxOpset)
	case im.opset > MaxOpset:
		return nil, fmt.Errorf("%w: opset %d is newer than %d, the newest read (%d to %d are): export with "+
			"torch.onnx.export(..., opset_version=20)", ErrUnsupported, im.opset, MaxOpset, MinOpset, MaxOpset)
	}
	functions := map[string]bool{}
	for _, fn := range m.GetFunctions() {
		functions[fn.GetName()] = true
	}
	if err := batchFirst(g, zeroInitializer(g, ext)); err != nil {
		return nil, err
	}
	if err := checkOps(g, functions); err != nil {
		return nil, err
	}
	in, err := im.inputs(g)
	if err != nil {
		return nil, err
	}
	for _, n := range g.GetNode() {
		for _, name := range n.GetInput() {
			im.uses[name]++
			im.readers[name] = append(im.readers[name], n)
		}
	}
	if len(g.GetOutput()) != 1 {
		return nil, fmt.Errorf("%w: %d graph outputs, want 1", ErrUnsupported, len(g.GetOutput()))
	}
	outName := g.GetOutput()[0].GetName()
	im.uses[outName]++
	for i, n := range g.GetNode() {
		if im.fused[n] {
			continue
		}
		if err := im.node(n, outName); err != nil {
			name := n.GetName()
			if name == "" {
				name = "#" + strconv.Itoa(i)
			}
			return nil, fmt.Errorf("onnx: node %q (#%d of %d, %s): %w", name, i, len(g.GetNode()), n.GetOpType(), err)
		}
	}
	out, ok := im.vals[outName]
	if !ok || !out.act || out.layer == solver.Input {
		return nil, fmt.Errorf("%w: graph output %q is not computed by a layer", ErrMissing, outName)
	}
	if out.layer != len(im.layers)-1 {
		return nil, fmt.Errorf("%w: graph output %q is not the last layer's output (dead branches?)", ErrUnsupported, outName)
	}
	if im.folded > 0 {
		im.notes = append(im.notes, fmt.Sprintf("%d convolutions have weights without module names (onnx::Conv_*): "+
			"the exporter folded batch normalization into them (torch.onnx.export in eval mode does). "+
			"The model runs as exported and can be fine-tuned, but without batch-norm layers or statistics; "+
			"to keep them, export with training=torch.onnx.TrainingMode.PRESERVE (model in eval mode) or "+
			"TrainingMode.TRAINING (do_constant_folding=False alone does not stop the folding in PyTorch 1.13)", im.folded))
	}
	f, err := im.file(in, m.GetProducerName()+" "+m.GetProducerVersion())
	if err != nil {
		return nil, err
	}
	return withMetadata(f, m.GetMetadataProps())
}

// MetaPrefix marks the ONNX metadata_props that carry a weight file's meta
// (the class names, models.MetaLabels, the input normalisation,
// models.MetaMean and MetaStd, a language model's vocabulary,
// models.MetaVocab): Export writes them, Import reads them back,
// so a model keeps its classes and normalisation through ONNX.
const MetaPrefix = "cotrain."

// withMetadata copies the class names and normalisation of props into f's
// meta, refusing malformed ones (ErrMalformed) rather than keeping a file
// that would not load.
func withMetadata(f *models.File, props []*onnxpb.StringStringEntryProto) (*models.File, error) {
	for _, p := range props {
		k, ours := strings.CutPrefix(p.GetKey(), MetaPrefix)
		if ours && (k == models.MetaLabels || k == models.MetaMean || k == models.MetaStd || k == models.MetaVocab) {
			f.Meta = models.SetMeta(f.Meta, k, p.GetValue())
		}
	}
	if _, _, err := f.Labels(); err != nil {
		return nil, fmt.Errorf("%w: metadata %s%s: %v", ErrMalformed, MetaPrefix, models.MetaLabels, err)
	}
	if _, _, err := f.InputNorm(); err != nil {
		return nil, fmt.Errorf("%w: metadata %s%s/%s: %v", ErrMalformed, MetaPrefix, models.MetaMean, models.MetaStd, err)
	}
	if _, err := models.Vocab(f.Meta, f.Config.Classes); err != nil {
		return nil, fmt.Errorf("%w: metadata %s%s: %v", ErrMalformed, MetaPrefix, models.MetaVocab, err)
	}
	return f, nil
}

// inputs registers the initializers and the single real graph input.
func (im *importer) inputs(g *onnxpb.GraphProto) (solver.Shape, error) {
	for _, p := range g.GetInitializer() {
		t, err := decodeTensor(p, im.ext)
		if err != nil {
			return solver.Shape{}, err
		}
		im.vals[t.name] = &value{konst: t}
	}
	var real []*onnxpb.ValueInfoProto
	for _, vi := range g.GetInput() {
		if _, isInit := im.vals[vi.GetName()]; !isInit {
			real = append(real, vi)
		}
	}
	if len(real) != 1 {
		return solver.Shape{}, fmt.Errorf("%w: %d graph inputs besides initializers, want 1", ErrUnsupported, len(real))
	}
	tt := real[0].GetType().GetTensorType()
	ids := false // token ids of a language model (ops_seq.go)
	switch onnxpb.TensorProto_DataType(tt.GetElemType()) {
	case onnxpb.TensorProto_FLOAT:
	case onnxpb.TensorProto_INT64, onnxpb.TensorProto_INT32:
		ids = true
	default:
		return solver.Shape{}, fmt.Errorf("%w: input %q of type %d, want float32 (or int64 token ids)", ErrUnsupported, real[0].GetName(), tt.GetElemType())
	}
	var dims []int
	for i, d := range tt.GetShape().GetDim() {
		if i > 0 && d.GetDimValue() <= 0 {
			return solver.Shape{}, fmt.Errorf("%w: input %q dimension %d is not fixed (only the batch may vary)", ErrUnsupported, real[0].GetName(), i)
		}
		// The batch is not read; the others are sizes of a sample, checked
		// (each and their product) before any arithmetic on them.
		v := max(d.GetDimValue(), 0)
		if i > 0 {
			if _, err := limits.Count(fmt.Sprintf("input %q dimension %d", real[0].GetName(), i), v, true); err != nil {
				return solver.Shape{}, fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
		dims = append(dims, int(min(v, limits.MaxElements)))
	}
	if len(dims) > 1 {
		if _, err := limits.Elements(fmt.Sprintf("input %q sample", real[0].GetName()), dims[1:]); err != nil {
			return solver.Shape{}, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	v := &value{act: true, layer: solver.Input, rank: len(dims)}
	switch {
	case ids && len(dims) == 2:
		// N×T ids, which cotrain's language models take as 1×1×T floats
		// (data.Text's samples); only an embedding reads them.
		v.shape, v.dims = solver.Shape{C: 1, H: 1, W: dims[1]}, []int{dims[1]}
		im.vals[real[0].GetName()] = v
		return v.shape, nil
	case ids:
		return solver.Shape{}, fmt.Errorf("%w: token ids %q of rank %d, want N×T", ErrUnsupported, real[0].GetName(), len(dims))
	}
	switch len(dims) {
	case 4:
		v.shape = solver.Shape{C: dims[1], H: dims[2], W: dims[3]}
	case 3:
		v.shape = solver.Shape{C: dims[1], H: 1, W: dims[2]} // N×C×L as N×C×1×L (ops_1d.go)
	case 2:
		v.shape = solver.Shape{C: dims[1], H: 1, W: 1}
	default:
		return solver.Shape{}, fmt.Errorf("%w: input %q of rank %d, want N×C×H×W, N×C×L or N×F", ErrUnsupported, real[0].GetName(), len(dims))
	}
	im.vals[real[0].GetName()] = v
	return v.shape, nil
}

// get returns input i of n, or an error naming it.
func (im *importer) get(n *onnxpb.NodeProto, i int) (*value, error) {
	if i >= len(n.GetInput()) || n.GetInput()[i] == "" {
		return nil, fmt.Errorf("%w: input %d not given", ErrMalformed, i)
	}
	name := n.GetInput()[i]
	v, ok := im.vals[name]
	if !ok {
		return nil, fmt.Errorf("%w: input %q is neither an initializer nor an earlier node's output", ErrMissing, name)
	}
	return v, nil
}

// act returns input i of n, which must be an activation without pending padding.
func (im *importer) act(n *onnxpb.NodeProto, i int) (*value, error) {
	v, err := im.get(n, i)
	if err == nil && !v.act {
		err = fmt.Errorf("%w: input %q is a constant, want an activation", ErrUnsupported, n.GetInput()[i])
	}
	if err == nil && v.pad != [2]int{} && n.GetOpType() != "Conv" && n.GetOpType() != "AveragePool" {
		v, err = im.materialize(v, n.GetInput()[i])
	}
	if err == nil && v.view != nil {
		v, err = im.canon(v, n.GetInput()[i], n.GetOpType())
	}
	return v, err
}

// actView returns input i of n, an activation that may be a view
// (views.go): for the operators that read views as they are.
func (im *importer) actView(n *onnxpb.NodeProto, i int) (*value, error) {
	v, err := im.get(n, i)
	if err == nil && v.view == nil {
		return im.act(n, i)
	}
	if err == nil && !v.act {
		err = fmt.Errorf("%w: input %q is a constant, want an activation", ErrUnsupported, n.GetInput()[i])
	}
	return v, err
}

// materialize turns a pending spatial zero padding (padOp), which a Conv or
// AveragePool would have folded, into a pad layer for another consumer.
func (im *importer) materialize(v *value, name string) (*value, error) {
	if v.padded != nil {
		return v.padded, nil
	}
	base := *v
	base.pad = [2]int{}
	p := []int{0, v.pad[0], v.pad[1]}
	dims := []int{v.shape.C, v.shape.H + 2*v.pad[0], v.shape.W + 2*v.pad[1]}
	if v.is1D() { // N×C×L: padded along L only
		p, dims = []int{0, v.pad[1]}, []int{v.shape.C, v.shape.W + 2*v.pad[1]}
	}
	d := models.Layer{Kind: "pad", Name: im.unique(name), Dims: base.ldims(), Before: p, After: p}
	out, err := im.push(d, []*value{&base}, 0, dims)
	v.padded = out
	return out, err
}

// ldims returns v's logical per-sample dims.
func (v *value) ldims() []int {
	switch {
	case v.dims != nil:
		return v.dims
	case v.rank == 4:
		return []int{v.shape.C, v.shape.H, v.shape.W}
	case v.rank == 3:
		return []int{v.shape.C, v.shape.W} // N×C×L stored as N×C×1×L (is1D)
	}
	return []int{v.shape.Size()}
}

// view returns v with new logical dims of the same size: the same layer
// output when the network shape does not change, else through a reshape
// layer (a copy), so that every value's shape is DimsShape of its dims.
func (im *importer) view(v *value, dims []int, name string) (*value, error) {
	if solver.DimsShape(dims) == v.shape {
		w := *v
		w.dims, w.rank, w.padded = slices.Clone(dims), len(dims)+1, nil
		return &w, nil
	}
	return im.push(models.Layer{Kind: "reshape", Name: im.unique(name), To: slices.Clone(dims)}, []*value{v}, 0, dims)
}

// konst returns input i of n, which must be a constant; optional inputs
// that are absent give nil.
func (im *importer) konst(n *onnxpb.NodeProto, i int, optional bool) (*tensor, error) {
	if optional && (i >= len(n.GetInput()) || n.GetInput()[i] == "") {
		return nil, nil
	}
	v, err := im.get(n, i)
	if err != nil {
		return nil, err
	}
	if v.konst == nil {
		return nil, fmt.Errorf("%w: input %q must be an initializer (weights computed at run time are not supported)",
			ErrUnsupported, n.GetInput()[i])
	}
	return v.konst, nil
}

// unique returns a layer name from base that no earlier layer has.
func (im *importer) unique(base string) string {
	base = strings.Trim(strings.ReplaceAll(base, "/", "."), ".")
	if base == "" {
		base = "layer"
	}
	name := base
	for k := 2; im.names[name]; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	im.names[name] = true
	return name
}

// layerName names the layer of node n: after its weight initializer when
// that has a module path ("features.0.weight" gives "features.0", so tensor
// names match PyTorch's state_dict), else after the node.
func (im *importer) layerName(n *onnxpb.NodeProto, weight string) string {
	if base, ok := strings.CutSuffix(weight, ".weight"); ok && !strings.HasPrefix(weight, "onnx::") {
		return im.unique(base)
	}
	if n.GetName() != "" {
		return im.unique(n.GetName())
	}
	return im.unique(strings.ToLower(n.GetOpType()) + strconv.Itoa(len(im.layers)))
}

// add appends layer d reading ins, sets it up to learn its output shape, and
// binds the node's first output to it.
func (im *importer) add(n *onnxpb.NodeProto, d models.Layer, ins []*value, rank int) (*value, error) {
	v, err := im.push(d, ins, rank, nil)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return v, err
}

// push appends layer d reading ins and sets it up; the value it returns is
// bound to no name yet. Its logical dims are dims when given (the rank is
// then 1 + len(dims)); else an elementwise layer (one input, same rank and
// shape) keeps its input's, and others have those of rank.
func (im *importer) push(d models.Layer, ins []*value, rank int, dims []int) (*value, error) {
	shapes := make([]solver.Shape, len(ins))
	d.In = make([]int, len(ins))
	for i, v := range ins {
		shapes[i], d.In[i] = v.shape, v.layer
	}
	if len(ins) == 1 && ins[0].layer == len(im.layers)-1 {
		d.In = nil // the previous layer: the common case, kept compact
	}
	nodes, err := models.GraphNodes([]models.Layer{d})
	if err != nil {
		return nil, err
	}
	out, err := solver.SetupLayer(nodes[0].Layer, shapes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShape, err)
	}
	if dims != nil && solver.DimsShape(dims) != out {
		return nil, fmt.Errorf("%w: layer %s outputs %v, not the %v of dims %v", ErrShape, d.Name, out, solver.DimsShape(dims), dims)
	}
	im.layers = append(im.layers, d)
	im.outs = append(im.outs, out)
	v := &value{act: true, layer: len(im.layers) - 1, shape: out, rank: rank, dims: slices.Clone(dims)}
	switch {
	case dims != nil:
		v.rank = len(dims) + 1
	case len(ins) == 1 && ins[0].rank == rank && ins[0].shape == out, d.Kind == "add" && ins[0].rank == rank && ins[0].shape == out:
		// An elementwise layer, or a join of inputs of one shape (a
		// residual Add of N×T×D), keeps the logical dims.
		v.dims = ins[0].dims
	}
	return v, nil
}

// file assembles the weight file: the graph description in Meta and the
// parameters in the order the built network lists them.
func (im *importer) file(in solver.Shape, producer string) (*models.File, error) {
	graph, err := models.EncodeGraph(im.layers)
	if err != nil {
		return nil, err
	}
	last := im.outs[len(im.outs)-1]
	f := &models.File{Model: models.GraphModel, Config: models.Config{Classes: last.Size(), Input: in}}
	f.Meta = append(f.Meta, [2]string{models.MetaGraph, graph}, [2]string{"onnx.producer", strings.TrimSpace(producer)},
		[2]string{"onnx.opset", strconv.FormatInt(im.opset, 10)})
	for _, note := range im.notes {
		f.Meta = append(f.Meta, [2]string{MetaNote, note})
	}
	nodes, err := models.GraphNodes(im.layers)
	if err != nil {
		return nil, err
	}
	// The layout alone: nothing is allocated before the initializers are
	// known to fill it.
	lay, err := solver.PlanNet(in, nodes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShape, err)
	}
	for _, g := range []struct {
		want []solver.Tensor
		have map[string]*tensor
		dst  *[]models.NamedTensor
	}{{lay.Params, im.params, &f.Params}, {lay.State, im.state, &f.State}} {
		for _, t := range g.want {
			src, ok := g.have[t.Name]
			if !ok {
				return nil, fmt.Errorf("%w: no data for %s", ErrMissing, t.Name)
			}
			if src.size() != t.Spec.Size() {
				return nil, fmt.Errorf("%w: %s has %v (%d elements) in the ONNX file, the layer needs %v",
					ErrShape, t.Name, src.dims, src.size(), t.Dims)
			}
			*g.dst = append(*g.dst, models.NamedTensor{Name: t.Name, Dims: t.Dims, Data: src.floats})
		}
	}
	return f, nil
}
