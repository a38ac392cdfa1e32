package gpu

import (
	"slices"
	"testing"
)

// TestUnaryTable checks the operator table's own consistency: each entry
// sits at its kind's index, names are unique (the model files' kinds and
// the ONNX operators), every entry has all of its code, at most two
// parameters with names a model file can store, and its test parameters
// are valid.
func TestUnaryTable(t *testing.T) {
	names, onnx := map[string]bool{}, map[string]bool{}
	for i, op := range UnaryOps() {
		if int(op.Kind) != i+1 {
			t.Errorf("entry %d (%s) has kind %d", i, op.Name, op.Kind)
		}
		if op.Name == "" || names[op.Name] {
			t.Errorf("entry %d: name %q empty or repeated", i, op.Name)
		}
		names[op.Name] = true
		if op.ONNX != "" {
			if onnx[op.ONNX] {
				t.Errorf("%s: ONNX operator %s mapped twice", op.Name, op.ONNX)
			}
			onnx[op.ONNX] = true
		}
		if op.Forward == nil || op.Backward == nil || op.Ref == nil || op.CLForward == "" || op.CLBackward == "" {
			t.Errorf("%s: Forward, Backward, Ref, CLForward and CLBackward are all required", op.Name)
		}
		if len(op.Params) > 2 {
			t.Errorf("%s: %d parameters, at most 2", op.Name, len(op.Params))
		}
		for _, p := range op.Params {
			if !slices.Contains([]string{"alpha", "beta", "min", "max"}, p.Name) {
				t.Errorf("%s: parameter %q is no field of a model file's layer", op.Name, p.Name)
			}
			if (p.ONNXAttr != "") == (p.ONNXInput > 0) && op.ONNX != "" {
				t.Errorf("%s: parameter %s needs an ONNX attribute or an input, not both", op.Name, p.Name)
			}
		}
		for _, a := range op.TestActs() {
			if err := a.Validate(); err != nil {
				t.Errorf("%s: test parameters: %v", op.Name, err)
			}
			if a.String() != op.Name {
				t.Errorf("%s: Act.String %q", op.Name, a.String())
			}
		}
	}
	if _, ok := (Act{Kind: numKinds}).Op(); ok {
		t.Error("a kind past the table has an entry")
	}
	if err := (Act{}).Validate(); err == nil {
		t.Error("the zero Act is valid")
	}
}
