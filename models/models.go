// Package models holds cotrain's model definitions and their weight file
// format.
//
// Caller's duties:
//  1. Pick a model by name (Names lists them) and a Config (Default gives the
//     model's own; Classes and the input shape may be changed).
//  2. Build it on a backend with Build, then initialise it with a seeded
//     generator (solver.Net.InitParams); or read a weight file (Read or
//     LoadFile) and build it with File.Build, which also loads the weights.
//     File.Build takes graph files too (GraphModel: imported ONNX models),
//     whose layers are stored in the file rather than registered.
//  3. Save with Snapshot and Write (or SaveFile, which writes atomically).
//
// A model is a config plus a list of layers; the parameter table follows from
// the layers, in PyTorch's parameters() order, so counts and flat vectors
// compare with the same network built in PyTorch.
package models

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/solver"
)

// ErrUnknownModel is returned for a model name that is not registered.
var ErrUnknownModel = errors.New("models: unknown model")

// Config sets what a model may vary. Zero fields take the model's defaults.
type Config struct {
	Classes int
	Input   solver.Shape
	// Width is a width multiplier (MobileNet's α); 0 means the default.
	Width float64
}

// Pairs returns the config as ordered key/value strings, for weight files
// and the wire.
func (c Config) Pairs() [][2]string {
	return [][2]string{
		{"classes", strconv.Itoa(c.Classes)},
		{"input", fmt.Sprintf("%dx%dx%d", c.Input.C, c.Input.H, c.Input.W)},
		{"width", strconv.FormatFloat(c.Width, 'g', -1, 64)},
	}
}

// ParseConfig is the inverse of Pairs; unknown keys are an error, so a file
// written by a newer cotrain with a setting this one does not know is refused
// rather than silently misread.
func ParseConfig(pairs [][2]string) (Config, error) {
	var c Config
	for _, kv := range pairs {
		var err error
		switch kv[0] {
		case "classes":
			c.Classes, err = strconv.Atoi(kv[1])
		case "input":
			_, err = fmt.Sscanf(kv[1], "%dx%dx%d", &c.Input.C, &c.Input.H, &c.Input.W)
		case "width":
			c.Width, err = strconv.ParseFloat(kv[1], 64)
		default:
			err = errors.New("unknown key")
		}
		if err != nil {
			return Config{}, fmt.Errorf("models: config %s=%q: %v", kv[0], kv[1], err)
		}
	}
	return c, nil
}

// Spec describes a registered model.
type Spec struct {
	Name        string
	Description string
	Default     Config
	layers      func(c Config) ([]solver.Node, error)
}

var registry = map[string]Spec{}

func register(s Spec) { registry[s.Name] = s }

// Names lists the registered models, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns a model's spec.
func Lookup(name string) (Spec, error) {
	s, ok := registry[name]
	if !ok {
		return Spec{}, fmt.Errorf("%w %q (known: %v)", ErrUnknownModel, name, Names())
	}
	return s, nil
}

// Resolve fills c's zero fields from the model's defaults.
func (s Spec) Resolve(c Config) Config {
	if c.Classes == 0 {
		c.Classes = s.Default.Classes
	}
	if c.Input == (solver.Shape{}) {
		c.Input = s.Default.Input
	}
	if c.Width == 0 {
		c.Width = s.Default.Width
	}
	return c
}

// Nodes returns the layers of the named model for config c (zero fields
// resolved from the model's defaults), not yet set up: solver.NewNet sets
// them up. It is what Build does before NewNet, for callers that must see
// the layers' configurations, such as the ONNX exporter.
func Nodes(name string, c Config) (Config, []solver.Node, error) {
	s, err := Lookup(name)
	if err != nil {
		return Config{}, nil, err
	}
	c = s.Resolve(c)
	if c.Classes < 1 || c.Input.Size() <= 0 {
		return Config{}, nil, fmt.Errorf("models: %s: %d classes on input %v", name, c.Classes, c.Input)
	}
	nodes, err := s.layers(c)
	if err != nil {
		return Config{}, nil, fmt.Errorf("models: %s: %w", name, err)
	}
	return c, nodes, nil
}

// Build makes a network of the named registered model on b. Its parameters
// are zero: initialise or load them next. A GraphModel file carries its own
// layers and is built with File.Build instead; naming GraphModel here is an
// error wrapping ErrUnknownModel.
func Build(b gpu.Backend, name string, c Config) (*solver.Net, error) {
	if name == GraphModel {
		return nil, fmt.Errorf("%w %q: its layers are stored in its weight file; build it with File.Build",
			ErrUnknownModel, name)
	}
	c, nodes, err := Nodes(name, c)
	if err != nil {
		return nil, err
	}
	net, err := solver.NewNet(b, c.Input, nodes)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", name, err)
	}
	if net.Out != (solver.Shape{C: c.Classes, H: 1, W: 1}) {
		return nil, fmt.Errorf("models: %s: output %v, want %d classes", name, net.Out, c.Classes)
	}
	return net, nil
}

// Stack turns layers into the nodes of a plain stack.
func Stack(layers ...solver.Layer) []solver.Node {
	return slices.Collect(func(yield func(solver.Node) bool) {
		for _, l := range layers {
			if !yield(solver.Node{Layer: l}) {
				return
			}
		}
	})
}
