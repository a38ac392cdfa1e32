package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/solver"
)

// A graph file is a weight file that carries its own network: its Model is
// GraphModel and its Meta holds, under MetaGraph, the JSON list of its
// layers (Layer). Imported ONNX models are such files (models/onnx writes
// them), and so is anything fine-tuned from one. File.Build and FileNodes
// read the list back, so every command that takes a weight file takes a
// graph file too; models.Build, which knows only registered names, does not.
//
// The description covers every layer kind solver has, so a network of
// registered layers round-trips through it exactly.

const (
	// GraphModel is the model name of weight files that carry their own
	// layer list. It is never a registered name.
	GraphModel = "onnx-graph"
	// MetaGraph is the File.Meta key of the JSON layer list.
	MetaGraph = "onnx.graph"
)

// ErrGraph is wrapped by errors about a graph description: missing, not
// JSON, or naming a layer kind this cotrain does not have.
var ErrGraph = errors.New("models: bad graph description")

// Layer is one layer of a graph description. Zero fields are omitted from
// the JSON; which fields apply depends on Kind (solver's Layer.Kind names).
type Layer struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// In lists the layers read, by index; -1 is the network input. Empty
	// means the previous layer (the input for the first).
	In []int `json:"in,omitempty"`

	Out    int  `json:"out,omitempty"`    // conv2d channels, linear units, prelu slopes (1 or the channels)
	KH     int  `json:"kh,omitempty"`     // conv2d, pools
	KW     int  `json:"kw,omitempty"`     //
	SH     int  `json:"sh,omitempty"`     //
	SW     int  `json:"sw,omitempty"`     //
	PH     int  `json:"ph,omitempty"`     //
	PW     int  `json:"pw,omitempty"`     //
	Groups int  `json:"groups,omitempty"` // conv2d, groupnorm
	DH     int  `json:"dh,omitempty"`     // dilatedconv2d, convtranspose2d, pools: dilations (absent on the last two: 1)
	DW     int  `json:"dw,omitempty"`     //
	OPH    int  `json:"oph,omitempty"`    // convtranspose2d: output padding (conv2d's fields otherwise)
	OPW    int  `json:"opw,omitempty"`    //
	NoBias bool `json:"nobias,omitempty"` // conv2d, linear
	Ceil   bool `json:"ceil,omitempty"`   // pools
	Incl   bool `json:"incl,omitempty"`   // avgpool2d: count padding

	Eps      float32 `json:"eps,omitempty"`      // batchnorm, layernorm, groupnorm
	Momentum float32 `json:"momentum,omitempty"` // batchnorm (PyTorch's sense)
	P        float32 `json:"p,omitempty"`        // dropout

	// The structural layers (solver/shape_ops.go, arith_ops.go) work on
	// logical per-sample dims (no batch axis); their axes count from 0
	// after the batch (ONNX's axis 1 is 0 here).
	Dims    []int     `json:"dims,omitempty"`      // input dims (binary, matmul: operand a; linear: applied to the last)
	Dims2   []int     `json:"dims2,omitempty"`     // binary, matmul: operand b (binary: the constant's when const is set)
	To      []int     `json:"to,omitempty"`        // reshape, resample: output dims
	Perm    []int     `json:"perm,omitempty"`      // transpose: output axis k is input axis perm[k]
	Axis    int       `json:"axis,omitempty"`      // concatnd; layernorm: the first normalised axis
	Axes    []int     `json:"axes,omitempty"`      // reduce
	Mean    bool      `json:"mean,omitempty"`      // reduce: mean, not sum
	Starts  []int     `json:"starts,omitempty"`    // slice
	Steps   []int     `json:"steps,omitempty"`     // slice
	Counts  []int     `json:"counts,omitempty"`    // slice
	Repeats []int     `json:"repeats,omitempty"`   // tile
	Before  []int     `json:"before,omitempty"`    // pad
	After   []int     `json:"after,omitempty"`     // pad
	Mode    string    `json:"mode,omitempty"`      // pad: reflect or edge (constant when empty); resample: nearest or linear
	Coord   string    `json:"coord,omitempty"`     // resample: ONNX coordinate_transformation_mode
	Nearest string    `json:"nearest,omitempty"`   // resample: ONNX nearest_mode (mode nearest)
	Scales  []float32 `json:"scales,omitempty"`    // resample: one per spatial axis (absent: sizes given)
	CubicA  float32   `json:"cubic_a,omitempty"`   // resample: ONNX cubic_coeff_a (mode cubic)
	Exclude bool      `json:"exclude,omitempty"`   // resample: ONNX exclude_outside (mode cubic, or linear with antialias)
	AntiAl  bool      `json:"antialias,omitempty"` // resample: ONNX antialias (mode linear)
	Value   float32   `json:"value,omitempty"`     // pad: the constant (mode constant)
	Op      string    `json:"op,omitempty"`        // binary: Add, Sub, Mul, Div
	Const   []float32 `json:"const,omitempty"`     // binary: the constant operand (not trained)
	First   bool      `json:"first,omitempty"`     // binary: the constant is the left operand

	// Activation parameters (gpu.Act), each in the field its entry of gpu's
	// operator table names (gpu.Param.Name). A clip bound that is absent is
	// none (-Inf or +Inf). Softmax uses Dims (absent: C×H×W) and Axes, the
	// contiguous axes it normalises over together.
	Alpha float32  `json:"alpha,omitempty"` // e.g. hardsigmoid, leakyrelu
	Beta  float32  `json:"beta,omitempty"`  // e.g. hardsigmoid
	Min   *float32 `json:"min,omitempty"`   // clip
	Max   *float32 `json:"max,omitempty"`   // clip

	// LRN (solver.LRN) uses Alpha and Beta too.
	Size int     `json:"size,omitempty"` // lrn: channels in the window; prepend: slices along Axis
	K    float32 `json:"k,omitempty"`    // lrn: the bias (PyTorch's k)

	// Sequence layers: an embedding's table is Vocab×Out; a recurrent
	// layer (lstm, gru) has Out hidden units in Layers stacked layers and
	// outputs every step when AllSteps is set, else the last.
	Vocab    int  `json:"vocab,omitempty"`     // embedding
	Layers   int  `json:"layers,omitempty"`    // lstm, gru
	AllSteps bool `json:"all_steps,omitempty"` // lstm, gru
}

// Describe turns layers (set up or not) into their description. A layer
// kind the description does not cover is an error wrapping ErrGraph.
func Describe(nodes []solver.Node) ([]Layer, error) {
	out := make([]Layer, len(nodes))
	for i, nd := range nodes {
		d := Layer{Kind: nd.Layer.Kind(), Name: nd.Layer.Name(), In: nd.Inputs}
		switch l := nd.Layer.(type) {
		case *solver.Conv2D:
			c := l.Cfg
			d.Out, d.KH, d.KW, d.SH, d.SW, d.PH, d.PW, d.Groups, d.NoBias =
				c.Out, c.KH, c.KW, c.StrideH, c.StrideW, c.PadH, c.PadW, c.Groups, c.NoBias
		case *solver.DilatedConv2D:
			c := l.Cfg
			d.Out, d.KH, d.KW, d.SH, d.SW, d.PH, d.PW, d.Groups, d.NoBias, d.DH, d.DW =
				c.Out, c.KH, c.KW, c.StrideH, c.StrideW, c.PadH, c.PadW, c.Groups, c.NoBias, l.DH, l.DW
		case *solver.ConvTranspose2D:
			c := l.Cfg
			d.Out, d.KH, d.KW, d.SH, d.SW, d.PH, d.PW, d.Groups, d.NoBias, d.OPH, d.OPW =
				c.Out, c.KH, c.KW, c.StrideH, c.StrideW, c.PadH, c.PadW, c.Groups, c.NoBias, l.OutPadH, l.OutPadW
			if l.DH > 1 || l.DW > 1 {
				d.DH, d.DW = l.DH, l.DW // absent: undilated, as before it could be
			}
		case *solver.Pool2D:
			if d.Kind != "globalavgpool" {
				c := l.Cfg
				d.KH, d.KW, d.SH, d.SW, d.PH, d.PW, d.Ceil, d.Incl =
					c.KH, c.KW, c.StrideH, c.StrideW, c.PadH, c.PadW, c.CeilMode, c.CountIncludePad
				// Dilations of 1 are left out: an undilated pool's
				// description is what it was before pools had them.
				if c.DilH > 1 || c.DilW > 1 {
					d.DH, d.DW = c.DilH, c.DilW
				}
			}
		case *solver.Linear:
			d.Out, d.NoBias, d.Dims = l.Out, l.NoBias, l.Dims
		case *solver.BatchNorm:
			d.Eps, d.Momentum = l.Eps, l.Momentum
		case *solver.Dropout:
			d.P = l.P
		case *solver.Reshape:
			d.To = l.Out
		case *solver.Transpose:
			d.Dims, d.Perm = l.In, l.Perm
		case *solver.Slice:
			d.Dims, d.Starts, d.Steps, d.Counts = l.In, l.Starts, l.Steps, l.Counts
		case *solver.Pad:
			d.Dims, d.Before, d.After, d.Mode, d.Value = l.In, l.Before, l.After, l.Mode, l.Value
		case *solver.ConcatND:
			d.Dims, d.Axis = l.Dims, l.Axis
		case *solver.Binary:
			d.Op, d.Dims, d.Dims2, d.Const, d.First = l.Op.String(), l.A, l.B, l.Const, l.ConstFirst
		case *solver.MatMul:
			d.Dims, d.Dims2 = l.A, l.B
		case *solver.Prepend:
			d.Dims, d.Axis, d.Size = l.Dims, l.Axis, l.Count
		case *solver.AddParam:
			d.Dims = l.Dims
		case *solver.ScaleParam:
			d.Dims, d.Dims2 = l.Dims, l.Scale
		case *solver.Tile:
			d.Dims, d.Repeats = l.In, l.Repeats
		case *solver.Resample:
			d.Dims, d.To, d.Mode, d.Coord, d.Nearest, d.Scales = l.In, l.Out, l.Mode, l.Coord, l.Nearest, l.Scales
			d.CubicA, d.Exclude, d.AntiAl = l.CubicA, l.Exclude, l.Antialias
		case *solver.Reduce:
			d.Dims, d.Axes, d.Mean = l.In, l.Axes, l.Mean
		case *solver.Activation:
			DescribeAct(&d, l.Act)
		case *solver.Softmax:
			d.Dims = l.Dims
			for a := l.First; a <= l.Last; a++ {
				d.Axes = append(d.Axes, a)
			}
		case *solver.LRN:
			d.Size, d.Alpha, d.Beta, d.K = l.Size, l.Alpha, l.Beta, l.Bias
		case *solver.PReLU:
			d.Out = l.Slopes
		case *solver.LayerNorm:
			d.Dims, d.Axis, d.Eps = l.Dims, l.Axis, l.Eps
		case *solver.GroupNorm:
			d.Groups, d.Eps, d.Dims = l.Groups, l.Eps, l.Dims
		case *solver.Embedding:
			d.Vocab, d.Out = l.Vocab, l.Dim
		case *solver.Recurrent:
			d.Out, d.Layers, d.AllSteps = l.Hidden, l.Layers, l.AllSteps
		case *solver.Flatten, *solver.Add, *solver.Concat:
		default:
			return nil, fmt.Errorf("%w: layer %s of kind %s has no description", ErrGraph, d.Name, d.Kind)
		}
		out[i] = d
	}
	return out, nil
}

// GraphNodes turns a description back into layers, not yet set up: ready
// for solver.NewNet. An unknown kind, a number out of internal/limits or a
// convolution or pool without positive strides (checkLayer) is an error
// wrapping ErrGraph; shapes are checked later, by solver.PlanNet.
func GraphNodes(layers []Layer) ([]solver.Node, error) {
	nodes := make([]solver.Node, len(layers))
	for i, d := range layers {
		if err := checkLayer(i, d); err != nil {
			return nil, err
		}
		var l solver.Layer
		switch d.Kind {
		case "conv2d":
			l = solver.NewConv2D(d.Name, solver.ConvConfig{Out: d.Out, KH: d.KH, KW: d.KW, StrideH: d.SH, StrideW: d.SW,
				PadH: d.PH, PadW: d.PW, Groups: d.Groups, NoBias: d.NoBias})
		case "dilatedconv2d":
			l = solver.NewDilatedConv2D(d.Name, solver.ConvConfig{Out: d.Out, KH: d.KH, KW: d.KW, StrideH: d.SH, StrideW: d.SW,
				PadH: d.PH, PadW: d.PW, Groups: d.Groups, NoBias: d.NoBias}, d.DH, d.DW)
		case "convtranspose2d":
			t := solver.NewConvTranspose2D(d.Name, solver.ConvConfig{Out: d.Out, KH: d.KH, KW: d.KW, StrideH: d.SH, StrideW: d.SW,
				PadH: d.PH, PadW: d.PW, Groups: d.Groups, NoBias: d.NoBias}, d.OPH, d.OPW)
			t.DH, t.DW = d.DH, d.DW
			l = t
		case "maxpool2d", "avgpool2d":
			// Absent dilations (0: every file written before pools had
			// them) are 1.
			c := solver.PoolConfig{KH: d.KH, KW: d.KW, StrideH: d.SH, StrideW: d.SW, PadH: d.PH, PadW: d.PW,
				DilH: d.DH, DilW: d.DW, CeilMode: d.Ceil, CountIncludePad: d.Incl}
			if d.KH <= 0 || d.KW <= 0 {
				return nil, fmt.Errorf("%w: layer %d (%s): window %dx%d", ErrGraph, i, d.Name, d.KH, d.KW)
			}
			if d.Kind == "maxpool2d" {
				l = solver.NewMaxPool2D(d.Name, c)
			} else {
				l = solver.NewAvgPool2D(d.Name, c)
			}
		case "globalavgpool":
			l = solver.NewGlobalAvgPool(d.Name)
		case "linear":
			lin := solver.NewLinear(d.Name, d.Out)
			lin.NoBias, lin.Dims = d.NoBias, d.Dims // Setup checks the dims
			l = lin
		case "softmax":
			if len(d.Axes) == 0 {
				return nil, fmt.Errorf("%w: layer %d (%s): softmax without axes", ErrGraph, i, d.Name)
			}
			for k := 1; k < len(d.Axes); k++ {
				if d.Axes[k] != d.Axes[k-1]+1 {
					return nil, fmt.Errorf("%w: layer %d (%s): softmax axes %v are not contiguous", ErrGraph, i, d.Name, d.Axes)
				}
			}
			l = solver.NewSoftmax(d.Name, d.Dims, d.Axes[0], d.Axes[len(d.Axes)-1])
		case "batchnorm":
			l = solver.NewBatchNorm(d.Name, d.Eps, d.Momentum)
		case "dropout":
			l = solver.NewDropout(d.Name, d.P)
		case "flatten":
			l = solver.NewFlatten(d.Name)
		case "add":
			l = solver.NewAdd(d.Name)
		case "lrn":
			l = solver.NewLRN(d.Name, d.Size, d.Alpha, d.Beta, d.K)
		case "groupnorm":
			l = solver.NewGroupNorm(d.Name, d.Groups, d.Eps, d.Dims) // Setup checks the dims and that the groups divide the channels
		case "layernorm":
			l = solver.NewLayerNorm(d.Name, d.Dims, d.Axis, d.Eps) // Setup checks the dims, axis and epsilon
		case "prelu":
			l = solver.NewPReLU(d.Name, d.Out) // Setup refuses a count other than 1 or the channels
		case "concat":
			l = solver.NewConcat(d.Name)
		case "embedding":
			l = solver.NewEmbedding(d.Name, d.Vocab, d.Out)
		case "lstm":
			l = solver.NewLSTM(d.Name, d.Out, d.Layers, d.AllSteps)
		case "gru":
			l = solver.NewGRU(d.Name, d.Out, d.Layers, d.AllSteps)
		case "reshape":
			l = solver.NewReshape(d.Name, d.To)
		case "transpose":
			l = solver.NewTranspose(d.Name, d.Dims, d.Perm)
		case "slice":
			l = solver.NewSlice(d.Name, d.Dims, d.Starts, d.Steps, d.Counts)
		case "pad":
			pad := solver.NewPadMode(d.Name, d.Dims, d.Before, d.After, d.Mode)
			pad.Value = d.Value
			l = pad
		case "concatnd":
			l = solver.NewConcatND(d.Name, d.Axis, d.Dims)
		case "matmul":
			l = solver.NewMatMul(d.Name, d.Dims, d.Dims2)
		case "prepend":
			l = solver.NewPrepend(d.Name, d.Dims, d.Axis, d.Size) // Setup checks the dims, axis and count
		case "addparam":
			l = solver.NewAddParam(d.Name, d.Dims) // Setup checks the dims
		case "scaleparam":
			l = solver.NewScaleParam(d.Name, d.Dims, d.Dims2) // Setup checks the dims and that they broadcast
		case "tile":
			l = solver.NewTile(d.Name, d.Dims, d.Repeats)
		case "resample":
			rs := solver.NewResample(d.Name, d.Dims, d.To, d.Mode, d.Coord, d.Nearest, d.Scales)
			rs.CubicA, rs.Exclude, rs.Antialias = d.CubicA, d.Exclude, d.AntiAl
			l = rs
		case "reduce":
			l = solver.NewReduce(d.Name, d.Dims, d.Axes, d.Mean)
		case "binary":
			op, ok := gpu.ParseBinOp(d.Op)
			if !ok {
				return nil, fmt.Errorf("%w: layer %d (%s): binary operation %q (Add, Sub, Mul, Div)", ErrGraph, i, d.Name, d.Op)
			}
			if d.Const != nil {
				l = solver.NewBinaryConst(d.Name, op, d.Dims, d.Dims2, d.Const, d.First)
			} else {
				l = solver.NewBinary(d.Name, op, d.Dims, d.Dims2)
			}
		default:
			op, ok := gpu.UnaryOpNamed(d.Kind) // an activation: one entry of gpu's operator table
			if !ok {
				return nil, fmt.Errorf("%w: layer %d (%s): unknown kind %q", ErrGraph, i, d.Name, d.Kind)
			}
			l = solver.NewActivation(d.Name, GraphAct(d, op))
		}
		nodes[i] = solver.Node{Layer: l, Inputs: d.In}
	}
	return nodes, nil
}

// DescribeAct writes a's parameters into d, each under the field its
// table entry names (gpu.Param.Name); min and max are left out when
// infinite (an absent bound).
func DescribeAct(d *Layer, a gpu.Act) {
	op, ok := a.Op()
	if !ok {
		return // the layer's Setup refuses the kind
	}
	for k, p := range op.Params {
		v := [2]float32{a.Alpha, a.Beta}[k]
		switch p.Name {
		case "alpha":
			d.Alpha = v
		case "beta":
			d.Beta = v
		case "min":
			if !math.IsInf(float64(v), -1) {
				d.Min = &v
			}
		case "max":
			if !math.IsInf(float64(v), 1) {
				d.Max = &v
			}
		default:
			panic("models: activation parameter field " + p.Name) // a table entry naming a field Layer lacks: our bug
		}
	}
}

// GraphAct is the activation op describes with the parameters of d; the
// layer's Setup validates them. An absent min is -Inf, an absent max +Inf.
func GraphAct(d Layer, op gpu.UnaryOp) gpu.Act {
	var v [2]float32
	for k, p := range op.Params {
		switch p.Name {
		case "alpha":
			v[k] = d.Alpha
		case "beta":
			v[k] = d.Beta
		case "min":
			v[k] = float32(math.Inf(-1))
			if d.Min != nil {
				v[k] = *d.Min
			}
		case "max":
			v[k] = float32(math.Inf(1))
			if d.Max != nil {
				v[k] = *d.Max
			}
		default:
			panic("models: activation parameter field " + p.Name) // our bug, as in DescribeAct
		}
	}
	return op.Act(v[0], v[1])
}

// EncodeGraph returns the compact JSON of layers for File.Meta under
// MetaGraph. A description longer than a weight file's string limit (64 MiB
// from format version 2; version 1 held 64 KiB, about 500 layers) is an
// error wrapping ErrGraph: the file could not be written.
func EncodeGraph(layers []Layer) (string, error) {
	b, err := json.Marshal(layers)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrGraph, err)
	}
	if len(b) > maxLongString {
		return "", fmt.Errorf("%w: %d bytes exceed the weight file's %d-byte string limit", ErrGraph, len(b), maxLongString)
	}
	return string(b), nil
}

// DecodeGraph is the inverse of EncodeGraph.
func DecodeGraph(raw string) ([]Layer, error) {
	if raw == "" {
		return nil, fmt.Errorf("%w: empty", ErrGraph)
	}
	var layers []Layer
	if err := json.Unmarshal([]byte(raw), &layers); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGraph, err)
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("%w: no layers", ErrGraph)
	}
	return layers, nil
}

// FileNodes returns the config and the layers (not set up) of any weight
// file: the graph stored in a GraphModel file, or the registered model's
// layers for f.Config (zero fields resolved from the model's defaults).
func FileNodes(f *File) (Config, []solver.Node, error) {
	if f.Model != GraphModel {
		return Nodes(f.Model, f.Config)
	}
	layers, err := DecodeGraph(f.MetaValue(MetaGraph))
	if err != nil {
		return Config{}, nil, fmt.Errorf("%s file, meta %s: %w", GraphModel, MetaGraph, err)
	}
	nodes, err := GraphNodes(layers)
	if err != nil {
		return Config{}, nil, err
	}
	return f.Config, nodes, nil
}
