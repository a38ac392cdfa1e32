package models

import (
	"fmt"

	"github.com/cotrain/cotrain/solver"
)

// Nodes returns the layers of the named model for config c (zero fields
// resolved from the model's defaults), unset up: solver.NewNet sets them up.
// It is what Build does before NewNet, for callers that must see the layers'
// configurations, such as the ONNX exporter.
func Nodes(name string, c Config) (Config, []solver.Node, error) {
	s, err := Lookup(name)
	if err != nil {
		return Config{}, nil, err
	}
	c = s.Resolve(c)
	nodes, err := s.layers(c)
	if err != nil {
		return Config{}, nil, fmt.Errorf("models: %s: %w", name, err)
	}
	return c, nodes, nil
}
