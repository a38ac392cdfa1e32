package solver

import (
	"errors"
	"fmt"

	"github.com/cotrain/cotrain/internal/limits"
)

// Layout is what NewNet would allocate for a network, found without
// allocating anything: the output shape and the parameter and state tensors
// with their offsets in the flat buffers. A caller holding weights from a
// file or a message compares them with the layout before NewNet, so that a
// description asking for more memory than its weights fill is refused, not
// allocated (PlanNet).
type Layout struct {
	In, Out   Shape
	Params    []Tensor // as Net.Tensors will list them
	State     []Tensor // as Net.StateTensors will list them
	NumParams int      // elements of Net.Params (and Net.Grads)
	NumState  int      // elements of Net.State

	// Per node: its output shape and its ranges of the flat buffers.
	shapes        []Shape
	params, state []Range
}

// PlanNet checks the graph and sets its layers up, as NewNet does, and
// returns the layout of the network without allocating its buffers. Every
// shape and parameter size goes through internal/limits (SetupLayer), and
// so do the sums of the flat buffers: a description whose sizes overflow or
// exceed limits.MaxElements is an error, never a panic or an allocation.
func PlanNet(in Shape, nodes []Node) (*Layout, error) {
	if err := CheckShape("input shape", in); err != nil {
		return nil, fmt.Errorf("solver: %w", err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("solver: a network needs at least one layer")
	}
	lay := &Layout{In: in}
	names := map[string]bool{}
	shapes := make([]Shape, len(nodes))
	for i, nd := range nodes {
		l := nd.Layer
		if names[l.Name()] {
			return nil, fmt.Errorf("solver: duplicate layer name %q", l.Name())
		}
		names[l.Name()] = true
		inputs := nd.Inputs
		if inputs == nil {
			inputs = []int{i - 1}
		}
		seen := map[int]bool{}
		var inShapes []Shape
		for _, j := range inputs {
			if j < Input || j >= i {
				return nil, fmt.Errorf("solver: layer %s: input %d is not an earlier node", l.Name(), j)
			}
			if seen[j] {
				return nil, fmt.Errorf("solver: layer %s: input %d given twice", l.Name(), j)
			}
			seen[j] = true
			if j == Input {
				inShapes = append(inShapes, in)
			} else {
				inShapes = append(inShapes, shapes[j])
			}
		}
		out, err := SetupLayer(l, inShapes)
		if err != nil {
			return nil, err
		}
		shapes[i] = out
		pr, sr := Range{Off: lay.NumParams}, Range{Off: lay.NumState}
		for _, p := range l.Params() {
			lay.Params = append(lay.Params, Tensor{Name: l.Name() + "." + p.Name, Dims: p.Dims, Off: lay.NumParams, Spec: p})
			if lay.NumParams, err = limits.Sum("parameters", lay.NumParams, p.Size()); err != nil {
				return nil, fmt.Errorf("solver: layer %s: %w", l.Name(), err)
			}
		}
		for _, p := range l.State() {
			lay.State = append(lay.State, Tensor{Name: l.Name() + "." + p.Name, Dims: p.Dims, Off: lay.NumState, Spec: p})
			if lay.NumState, err = limits.Sum("state", lay.NumState, p.Size()); err != nil {
				return nil, fmt.Errorf("solver: layer %s: %w", l.Name(), err)
			}
		}
		pr.Len, sr.Len = lay.NumParams-pr.Off, lay.NumState-sr.Off
		lay.params, lay.state = append(lay.params, pr), append(lay.state, sr)
	}
	lay.shapes = shapes
	lay.Out = shapes[len(shapes)-1]
	return lay, nil
}

// SetupLayer sets l up on inputs of the given shapes and checks what came
// out against internal/limits: the output shape, and each parameter and
// state tensor (every dimension positive, the product at most
// limits.MaxElements). Anything that sets a layer up from a description it
// did not write (PlanNet, NewNet, the ONNX importer) goes through it.
func SetupLayer(l Layer, in []Shape) (Shape, error) {
	for _, s := range in {
		if err := CheckShape("input", s); err != nil {
			return Shape{}, fmt.Errorf("solver: layer %s (%s): %w", l.Name(), l.Kind(), err)
		}
	}
	out, err := l.Setup(in)
	if err != nil {
		return Shape{}, fmt.Errorf("solver: layer %s (%s): %w", l.Name(), l.Kind(), err)
	}
	if err := CheckShape("output", out); err != nil {
		return Shape{}, fmt.Errorf("solver: layer %s (%s): %w", l.Name(), l.Kind(), err)
	}
	for _, ps := range [][]ParamSpec{l.Params(), l.State()} {
		for _, p := range ps {
			if _, err := limits.Elements(l.Name()+"."+p.Name, p.Dims); err != nil {
				return Shape{}, fmt.Errorf("solver: layer %s (%s): %w", l.Name(), l.Kind(), err)
			}
		}
	}
	return out, nil
}

// CheckShape checks a per-sample shape: every size positive and the
// number of elements at most limits.MaxElements. what names it.
func CheckShape(what string, s Shape) error {
	if _, err := limits.Elements(what+" "+s.String(), []int{s.C, s.H, s.W}); err != nil {
		return err
	}
	return nil
}
