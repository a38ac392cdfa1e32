package models

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// Resolved returns the file's config with a registered model's zero fields
// filled from the model's defaults (a graph file's config is complete).
func (f *File) Resolved() Config {
	if s, err := Lookup(f.Model); err == nil {
		return s.Resolve(f.Config)
	}
	return f.Config
}

// Labels returns the class names the file records, or numbered ones when it
// records none (a file from before names were stored); see Labels.
func (f *File) Labels() ([]string, bool, error) { return Labels(f.Meta, f.Resolved().Classes) }

// InputNorm returns the input normalisation the file records, or
// DefaultNorm when it records none; see InputNorm.
func (f *File) InputNorm() (Norm, bool, error) { return InputNorm(f.Meta, f.Resolved().Input.C) }

// Retarget returns a file of the same model that serves the given classes,
// and whether its head had to change:
//
//   - when f's head has len(labels) outputs and f names no classes, or the
//     same ones in the same order, it is f's weights with the names recorded;
//   - otherwise the last layer with parameters (a linear or convolution
//     layer: the classifier) is replaced by a freshly initialised one, drawn
//     from r, of len(labels) outputs; every other tensor keeps its values.
//
// The result carries no optimizer state. f is not modified.
func Retarget(f *File, labels []string, r *rand.Rand) (*File, bool, error) {
	if err := CheckLabels(labels); err != nil {
		return nil, false, err
	}
	cfg := f.Resolved()
	names, named, err := f.Labels()
	if err != nil {
		return nil, false, err
	}
	out := *f
	out.Optimizer, out.OptSteps, out.OptState = "", 0, nil
	if cfg.Classes == len(labels) && (!named || slices.Equal(names, labels)) {
		out.Meta = WithLabels(f.Meta, labels)
		return &out, false, nil
	}
	cfg.Classes = len(labels)
	meta := WithLabels(f.Meta, labels)
	var nodes []solver.Node
	if f.Model == GraphModel {
		layers, err := DecodeGraph(MetaValue(f.Meta, MetaGraph))
		if err != nil {
			return nil, false, err
		}
		i := len(layers) - 1
		for i >= 0 && layers[i].Kind != "linear" && layers[i].Kind != "conv2d" && !hasParams(layers[i].Kind) {
			i--
		}
		if i < 0 || (layers[i].Kind != "linear" && layers[i].Kind != "conv2d") {
			return nil, false, fmt.Errorf("%w: the last layer with parameters is not a linear or convolution layer: no head to replace", ErrModelMismatch)
		}
		layers = slices.Clone(layers)
		layers[i].Out = len(labels)
		graph, err := EncodeGraph(layers)
		if err != nil {
			return nil, false, err
		}
		meta = SetMeta(meta, MetaGraph, graph)
		if nodes, err = GraphNodes(layers); err != nil {
			return nil, false, err
		}
	} else if cfg, nodes, err = Nodes(f.Model, cfg); err != nil {
		return nil, false, err
	}
	net, err := solver.NewNet(cpu.NewCPU(), cfg.Input, nodes)
	if err != nil {
		return nil, false, fmt.Errorf("models: new head of %d classes: %w", len(labels), err)
	}
	if net.Out.Size() != len(labels) {
		return nil, false, fmt.Errorf("%w: with a head of %d outputs the model outputs %v: the head is not the last layer with parameters",
			ErrModelMismatch, len(labels), net.Out)
	}
	net.InitParams(r)
	net.InitState()
	fresh := Snapshot(f.Model, cfg, net, nil)
	// The head is the last layer with parameters; its tensors are the last
	// ones of the table (parameters are laid out in layer order).
	var head int
	for _, l := range slices.Backward(net.Layers()) {
		if l.Params > 0 {
			head = l.Params
			break
		}
	}
	keep := len(fresh.Params)
	for left := head; left > 0 && keep > 0; keep-- {
		left -= len(fresh.Params[keep-1].Data)
	}
	if len(f.Params) != len(fresh.Params) {
		return nil, false, fmt.Errorf("%w: %d parameter tensors, the model has %d", ErrModelMismatch, len(f.Params), len(fresh.Params))
	}
	for i := range keep {
		o, n := f.Params[i], &fresh.Params[i]
		if o.Name != n.Name || !slices.Equal(o.Dims, n.Dims) {
			return nil, false, fmt.Errorf("%w: parameter %d is %s %v, the model has %s %v", ErrModelMismatch, i, o.Name, o.Dims, n.Name, n.Dims)
		}
		n.Data = slices.Clone(o.Data)
	}
	for i := range fresh.State {
		if i < len(f.State) && f.State[i].Name == fresh.State[i].Name && slices.Equal(f.State[i].Dims, fresh.State[i].Dims) {
			fresh.State[i].Data = slices.Clone(f.State[i].Data)
		}
	}
	fresh.Meta = meta
	return fresh, true, nil
}

// hasParams reports whether layers of a kind have parameters of their own.
func hasParams(kind string) bool { return kind == "batchnorm" }
