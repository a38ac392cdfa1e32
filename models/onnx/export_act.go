package onnx

import (
	"github.com/cotrain/cotrain/solver"
)

// softmax emits a softmax layer reading x (of per-sample dims xd): one
// Softmax node (opset 13's single axis) when it normalises over one axis,
// else a Reshape to [-1, outer, c, inner], a Softmax over axis 2 and a
// Reshape back, so that several axes normalise together.
func (e *exporter) softmax(l *solver.Softmax, x string, xd []int) string {
	name, dims := l.Name(), l.InDims()
	x = e.ensure(x, xd, dims, name+".in")
	if l.First == l.Last {
		return e.node("Softmax", name, []string{x}, attrInt("axis", l.First+1))
	}
	outer, c, inner := 1, 1, 1
	for k, d := range dims {
		switch {
		case k < l.First:
			outer *= d
		case k <= l.Last:
			c *= d
		default:
			inner *= d
		}
	}
	x = e.ensure(x, dims, []int{outer, c, inner}, name+".flat")
	y := e.node("Softmax", name, []string{x}, attrInt("axis", 2))
	return e.ensure(y, []int{outer, c, inner}, dims, name+".back")
}
