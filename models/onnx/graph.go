// Package onnx reads ONNX models into cotrain weight files and writes
// cotrain networks as ONNX models.
//
// Caller's duties:
//  1. Import an ONNX file with Import: the result is a models.File of the
//     model kind "onnx-graph" (GraphModel) whose layer list is kept in the
//     file's Meta (key MetaGraph) and whose parameters are the ONNX
//     initializers. Read File.Meta's "onnx.note" entries: they say what the
//     import changed (a final Softmax dropped, batch norm folded by the
//     exporter).
//  2. Build an imported file with Build (not File.Build, which knows only
//     registered models): it reconstructs the network from the graph and
//     loads the weights. Build also accepts files of registered models.
//  3. Export any weight file with Export: opset 13, input "input"
//     (batch×C×H×W, dynamic batch), output "output" (batch×classes).
//
// The graph description is a JSON list of layers (Layer): kind, name, the
// indices of the layers it reads, and the layer's configuration. It covers
// every layer kind solver has, so a network of registered layers round-trips
// through it exactly.
package onnx

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

const (
	// GraphModel is the model name of weight files that carry their own
	// layer list (imported ONNX graphs).
	GraphModel = "onnx-graph"
	// MetaGraph is the File.Meta key of the JSON layer list.
	MetaGraph = "onnx.graph"
	// MetaNote is the File.Meta key of each note the import made (repeated).
	MetaNote = "onnx.note"
	// maxGraphJSON is the weight file's cap on a string (models' maxString).
	maxGraphJSON = 1<<16 - 1
)

// Errors; the returned errors wrap these and say more.
var (
	ErrMalformed   = errors.New("onnx: malformed model")
	ErrUnsupported = errors.New("onnx: unsupported")
	ErrMissing     = errors.New("onnx: missing tensor")
	ErrShape       = errors.New("onnx: shape mismatch")
	ErrGraph       = errors.New("onnx: bad graph description")
)

// Layer is one layer of a graph description. Zero fields are omitted from
// the JSON; which fields apply depends on Kind (solver's Layer.Kind names).
type Layer struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// In lists the layers read, by index; -1 is the network input. Empty
	// means the previous layer (the input for the first).
	In []int `json:"in,omitempty"`

	Out    int  `json:"out,omitempty"`    // conv2d channels, linear units
	KH     int  `json:"kh,omitempty"`     // conv2d, pools
	KW     int  `json:"kw,omitempty"`     //
	SH     int  `json:"sh,omitempty"`     //
	SW     int  `json:"sw,omitempty"`     //
	PH     int  `json:"ph,omitempty"`     //
	PW     int  `json:"pw,omitempty"`     //
	Groups int  `json:"groups,omitempty"` // conv2d
	NoBias bool `json:"nobias,omitempty"` // conv2d, linear
	Ceil   bool `json:"ceil,omitempty"`   // pools
	Incl   bool `json:"incl,omitempty"`   // avgpool2d: count padding

	Eps      float32 `json:"eps,omitempty"`      // batchnorm
	Momentum float32 `json:"momentum,omitempty"` // batchnorm (PyTorch's sense)
	P        float32 `json:"p,omitempty"`        // dropout
}

// Describe turns layers (set up or not) into their description.
func Describe(nodes []solver.Node) ([]Layer, error) {
	out := make([]Layer, len(nodes))
	for i, nd := range nodes {
		d := Layer{Kind: nd.Layer.Kind(), Name: nd.Layer.Name(), In: nd.Inputs}
		switch l := nd.Layer.(type) {
		case *solver.Conv2D:
			c := l.Cfg
			d.Out, d.KH, d.KW, d.SH, d.SW, d.PH, d.PW, d.Groups, d.NoBias =
				c.Out, c.KH, c.KW, c.StrideH, c.StrideW, c.PadH, c.PadW, c.Groups, c.NoBias
		case *solver.Pool2D:
			if d.Kind != "globalavgpool" {
				c := l.Cfg
				d.KH, d.KW, d.SH, d.SW, d.PH, d.PW, d.Ceil, d.Incl =
					c.KH, c.KW, c.StrideH, c.StrideW, c.PadH, c.PadW, c.CeilMode, c.CountIncludePad
			}
		case *solver.Linear:
			d.Out, d.NoBias = l.Out, l.NoBias
		case *solver.BatchNorm:
			d.Eps, d.Momentum = l.Eps, l.Momentum
		case *solver.Dropout:
			d.P = l.P
		case *solver.Activation, *solver.Flatten, *solver.Add, *solver.Concat:
		default:
			return nil, fmt.Errorf("%w: layer %s of kind %s has no description", ErrUnsupported, d.Name, d.Kind)
		}
		out[i] = d
	}
	return out, nil
}

// Nodes turns a description back into layers, ready for solver.NewNet.
func Nodes(layers []Layer) ([]solver.Node, error) {
	nodes := make([]solver.Node, len(layers))
	for i, d := range layers {
		var l solver.Layer
		switch d.Kind {
		case "conv2d":
			l = solver.NewConv2D(d.Name, solver.ConvConfig{Out: d.Out, KH: d.KH, KW: d.KW, StrideH: d.SH, StrideW: d.SW,
				PadH: d.PH, PadW: d.PW, Groups: d.Groups, NoBias: d.NoBias})
		case "maxpool2d", "avgpool2d":
			c := solver.PoolConfig{KH: d.KH, KW: d.KW, StrideH: d.SH, StrideW: d.SW, PadH: d.PH, PadW: d.PW,
				CeilMode: d.Ceil, CountIncludePad: d.Incl}
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
			lin.NoBias = d.NoBias
			l = lin
		case "relu":
			l = solver.NewReLU(d.Name)
		case "relu6":
			l = solver.NewReLU6(d.Name)
		case "batchnorm":
			l = solver.NewBatchNorm(d.Name, d.Eps, d.Momentum)
		case "dropout":
			l = solver.NewDropout(d.Name, d.P)
		case "flatten":
			l = solver.NewFlatten(d.Name)
		case "add":
			l = solver.NewAdd(d.Name)
		case "concat":
			l = solver.NewConcat(d.Name)
		default:
			return nil, fmt.Errorf("%w: layer %d (%s): unknown kind %q", ErrGraph, i, d.Name, d.Kind)
		}
		nodes[i] = solver.Node{Layer: l, Inputs: d.In}
	}
	return nodes, nil
}

// encodeGraph is the compact JSON that goes into File.Meta.
func encodeGraph(layers []Layer) (string, error) {
	b, err := json.Marshal(layers)
	if err != nil {
		return "", err
	}
	if len(b) > maxGraphJSON {
		return "", fmt.Errorf("%w: graph description of %d bytes exceeds the weight file's %d-byte string limit",
			ErrUnsupported, len(b), maxGraphJSON)
	}
	return string(b), nil
}

// FileNodes returns the layers of any weight file: the graph stored in an
// imported file, or the registered model's layers.
func FileNodes(f *models.File) (models.Config, []solver.Node, error) {
	if f.Model != GraphModel {
		return models.Nodes(f.Model, f.Config)
	}
	raw := f.MetaValue(MetaGraph)
	if raw == "" {
		return models.Config{}, nil, fmt.Errorf("%w: %s file without %s meta", ErrGraph, GraphModel, MetaGraph)
	}
	var layers []Layer
	if err := json.Unmarshal([]byte(raw), &layers); err != nil {
		return models.Config{}, nil, fmt.Errorf("%w: %v", ErrGraph, err)
	}
	nodes, err := Nodes(layers)
	return f.Config, nodes, err
}

// Build makes the network of any weight file on b and loads its weights and
// state: imported graphs (GraphModel) from their stored description,
// registered models as models.Build does.
func Build(b gpu.Backend, f *models.File) (*solver.Net, error) {
	if f.Model != GraphModel {
		return f.Build(b)
	}
	c, nodes, err := FileNodes(f)
	if err != nil {
		return nil, err
	}
	net, err := solver.NewNet(b, c.Input, nodes)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	if net.Out.Size() != c.Classes {
		return nil, fmt.Errorf("%w: the graph gives %v outputs, the file says %d classes", ErrShape, net.Out, c.Classes)
	}
	if err := f.Apply(net, nil); err != nil {
		return nil, err
	}
	return net, nil
}
