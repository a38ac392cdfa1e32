package gpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBinaryTable holds every entry of the binary operator table to its
// float64 reference: Forward to Ref's value, Partial (g = 1) to Ref's
// derivatives, and Ref's derivatives to central differences of its value
// (away from ties), so that a wrong formula in any field fails; the names
// round-trip through String and ParseBinOp.
func TestBinaryTable(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i, e := range BinaryOps() {
		if int(e.Op) != i+1 || e.Op.String() != e.ONNX {
			t.Fatalf("entry %d is %v (%q): the table is indexed by BinOp", i, e.Op, e.ONNX)
		}
		if op, ok := ParseBinOp(e.ONNX); !ok || op != e.Op {
			t.Errorf("ParseBinOp(%q) = %v, %v", e.ONNX, op, ok)
		}
		if e.Forward == nil || e.Partial == nil || e.Ref == nil || e.CLForward == "" || e.CLPartial[0] == "" || e.CLPartial[1] == "" {
			t.Fatalf("%s: an empty field", e.ONNX)
		}
		for range 200 {
			x, y := float32(r.Float64()*4-2), float32(r.Float64()*4-2)
			if e.Positive {
				x = float32(math.Abs(float64(x))) + 0.25
			}
			rv, dx, dy := e.Ref(float64(x), float64(y))
			got := e.Forward(x, y)
			if d := math.Abs(float64(got) - rv); d > 1e-6*math.Max(1, math.Abs(rv)) {
				t.Fatalf("%s(%v, %v) = %v, reference %v", e.ONNX, x, y, got, rv)
			}
			for wrt, want := range []float64{dx, dy} {
				if d := float64(e.Partial(wrt, 1, x, y, got)); math.Abs(d-want) > 1e-5*math.Max(1, math.Abs(want)) {
					t.Fatalf("%s(%v, %v): partial %d is %v, reference %v", e.ONNX, x, y, wrt, d, want)
				}
			}
			const h = 1e-6
			fx := func(a, b float64) float64 { v, _, _ := e.Ref(a, b); return v }
			cx := (fx(float64(x)+h, float64(y)) - fx(float64(x)-h, float64(y))) / (2 * h)
			cy := (fx(float64(x), float64(y)+h) - fx(float64(x), float64(y)-h)) / (2 * h)
			if math.Abs(float64(x)-float64(y)) > 1e-3 &&
				(math.Abs(cx-dx) > 1e-5*math.Max(1, math.Abs(dx)) || math.Abs(cy-dy) > 1e-5*math.Max(1, math.Abs(dy))) {
				t.Fatalf("%s(%v, %v): reference derivatives %v, %v; central differences %v, %v", e.ONNX, x, y, dx, dy, cx, cy)
			}
		}
	}
	if _, ok := BinOp(0).Entry(); ok {
		t.Error("BinOp 0 has an entry")
	}
	if _, ok := ParseBinOp("Mod"); ok {
		t.Error("ParseBinOp(Mod) found an operation")
	}
}
