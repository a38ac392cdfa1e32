package gpu

import (
	"fmt"
	"math"
)

// The binary elementwise operator table: every operation of Broadcast is
// one BinaryOp entry in binaryOps below, and the rest is generated from it:
//
//   - gpu/cpu runs Forward (its Broadcast keeps tight loops for +, −, ×
//     and ÷, held to the entries' bits by the conformance suite) and
//     Partial (BroadcastPartial);
//   - gpu/opencl builds the kernels broadcast and broadcast_partial from
//     CLForward and CLPartial, one switch case per entry (actgen.go);
//   - solver.Binary's backward pass asks BroadcastPartial for each
//     operand's share of the gradient and reads what Reads says;
//   - models and models/onnx name the operation ONNX in model files and
//     import and export the ONNX operator of that name;
//   - gpu/gputest checks every entry on every backend against Ref, the
//     partial derivatives against central differences of Ref.
//
// Adding an operation is adding its BinOp constant (tensor.go) and its
// entry here (docs/engine.md, "Adding an operator").

// BinaryOp describes one binary elementwise operation r = f(x, y).
type BinaryOp struct {
	Op BinOp
	// ONNX is the operation's ONNX operator, also its name in model files
	// and BinOp.String.
	ONNX string
	// Forward is f on the CPU. It must round the same way on every
	// platform (write each product that Go might fuse as float32(...)).
	Forward func(x, y float32) float32
	// Partial returns g·∂f/∂x (wrt 0) or g·∂f/∂y (wrt 1) at (x, y), r
	// being f(x, y): the operand's share of the output gradient g.
	Partial func(wrt int, g, x, y, r float32) float32
	// CLForward is OpenCL C that sets float r from x and y; CLPartial[wrt]
	// sets float d from g, x, y and r as Partial does. The kernels are
	// built without contraction: write each rounding Partial makes as its
	// own statement.
	CLForward string
	CLPartial [2]string
	// Reads says which values Partial reads for each operand: x, y, r.
	// solver.Binary keeps only those for its backward pass.
	Reads [2]BinReads
	// Ref is f and its two partial derivatives in float64 (the tests'
	// reference; at a tie or a kink the derivatives are Partial's).
	Ref func(x, y float64) (r, dx, dy float64)
	// Positive marks an operation the tests draw x > 0 for (Pow).
	Positive bool
}

// BinReads says which of x, y and the output r a partial derivative reads.
type BinReads struct{ X, Y, R bool }

// BinaryOps returns the table in BinOp order (a copy).
func BinaryOps() []BinaryOp { return append([]BinaryOp(nil), binaryOps[:]...) }

// Entry returns o's table entry, and whether o is in the table.
func (o BinOp) Entry() (BinaryOp, bool) {
	if o == 0 || int(o) > len(binaryOps) {
		return BinaryOp{}, false
	}
	return binaryOps[o-1], true
}

// String returns the operation's ONNX name.
func (o BinOp) String() string {
	if e, ok := o.Entry(); ok {
		return e.ONNX
	}
	return fmt.Sprintf("binop(%d)", uint8(o))
}

// ParseBinOp is String's inverse: the operation of an ONNX name, and
// whether there is one.
func ParseBinOp(name string) (BinOp, bool) {
	for _, e := range binaryOps {
		if e.ONNX == name {
			return e.Op, true
		}
	}
	return 0, false
}

// MustValid panics on an operation outside the table: layers check theirs
// when they are set up, so one reaching a kernel is our bug.
func (o BinOp) MustValid(caller string) {
	if _, ok := o.Entry(); !ok {
		panic("gpu: " + caller + ": unknown operation " + o.String())
	}
}

// tieHalf is the share of the gradient each operand of Max or Min gets where
// they are equal: half, as PyTorch's maximum and minimum give.
const tieHalf = 0.5

var binaryOps = [...]BinaryOp{
	BinAdd - 1: {
		Op: BinAdd, ONNX: "Add",
		Forward:   func(x, y float32) float32 { return x + y },
		Partial:   func(_ int, g, _, _, _ float32) float32 { return g },
		CLForward: "r = x + y;",
		CLPartial: [2]string{"d = g;", "d = g;"},
		Ref:       func(x, y float64) (float64, float64, float64) { return x + y, 1, 1 },
	},
	BinSub - 1: {
		Op: BinSub, ONNX: "Sub",
		Forward: func(x, y float32) float32 { return x - y },
		Partial: func(wrt int, g, _, _, _ float32) float32 {
			if wrt == 0 {
				return g
			}
			return -g
		},
		CLForward: "r = x - y;",
		CLPartial: [2]string{"d = g;", "d = -g;"},
		Ref:       func(x, y float64) (float64, float64, float64) { return x - y, 1, -1 },
	},
	BinMul - 1: {
		Op: BinMul, ONNX: "Mul",
		Forward: func(x, y float32) float32 { return x * y },
		Partial: func(wrt int, g, x, y, _ float32) float32 {
			if wrt == 0 {
				return g * y
			}
			return g * x
		},
		CLForward: "r = x * y;",
		CLPartial: [2]string{"d = g * y;", "d = g * x;"},
		Reads:     [2]BinReads{{Y: true}, {X: true}},
		Ref:       func(x, y float64) (float64, float64, float64) { return x * y, y, x },
	},
	BinDiv - 1: {
		Op: BinDiv, ONNX: "Div",
		Forward: func(x, y float32) float32 { return x / y },
		// The divisor's share is −(g·r)/y: r = x/y is kept, not x.
		Partial: func(wrt int, g, _, y, r float32) float32 {
			if wrt == 0 {
				return g / y
			}
			t := float32(g * r)
			return -(t / y)
		},
		CLForward: "r = x / y;",
		CLPartial: [2]string{"d = g / y;", "float t = g * r; d = -(t / y);"},
		Reads:     [2]BinReads{{Y: true}, {Y: true, R: true}},
		Ref:       func(x, y float64) (float64, float64, float64) { return x / y, 1 / y, -x / (y * y) },
	},
	BinMax - 1: {
		Op: BinMax, ONNX: "Max",
		// NaN in either operand gives NaN (PyTorch's maximum), and the
		// gradient goes to the larger operand, half to each on a tie.
		Forward: func(x, y float32) float32 {
			if x != x || y != y {
				return float32(math.NaN())
			}
			return max(x, y)
		},
		Partial: func(wrt int, g, x, y, _ float32) float32 {
			if wrt == 1 {
				x, y = y, x
			}
			switch {
			case x > y:
				return g
			case x == y:
				return g * tieHalf
			}
			return 0
		},
		CLForward: "r = (x != x || y != y) ? NAN : (x > y ? x : y);",
		CLPartial: [2]string{"d = x > y ? g : (x == y ? g * 0.5f : 0);", "d = y > x ? g : (x == y ? g * 0.5f : 0);"},
		Reads:     [2]BinReads{{X: true, Y: true}, {X: true, Y: true}},
		Ref: func(x, y float64) (float64, float64, float64) {
			switch {
			case x > y:
				return x, 1, 0
			case x < y:
				return y, 0, 1
			}
			return x, tieHalf, tieHalf
		},
	},
	BinMin - 1: {
		Op: BinMin, ONNX: "Min",
		Forward: func(x, y float32) float32 {
			if x != x || y != y {
				return float32(math.NaN())
			}
			return min(x, y)
		},
		Partial: func(wrt int, g, x, y, _ float32) float32 {
			if wrt == 1 {
				x, y = y, x
			}
			switch {
			case x < y:
				return g
			case x == y:
				return g * tieHalf
			}
			return 0
		},
		CLForward: "r = (x != x || y != y) ? NAN : (x < y ? x : y);",
		CLPartial: [2]string{"d = x < y ? g : (x == y ? g * 0.5f : 0);", "d = y < x ? g : (x == y ? g * 0.5f : 0);"},
		Reads:     [2]BinReads{{X: true, Y: true}, {X: true, Y: true}},
		Ref: func(x, y float64) (float64, float64, float64) {
			switch {
			case x < y:
				return x, 1, 0
			case x > y:
				return y, 0, 1
			}
			return x, tieHalf, tieHalf
		},
	},
	BinPow - 1: {
		Op: BinPow, ONNX: "Pow",
		// x^y through float64 (exact enough to round alike everywhere);
		// ∂/∂x = y·x^(y−1) and ∂/∂y = r·ln x, each rounded to float32
		// before the product with g. The device computes in float.
		Forward: func(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) },
		Partial: func(wrt int, g, x, y, r float32) float32 {
			if wrt == 0 {
				d := float32(float64(y) * math.Pow(float64(x), float64(y)-1))
				return g * d
			}
			d := float32(float64(r) * math.Log(float64(x)))
			return g * d
		},
		CLForward: "r = pow(x, y);",
		CLPartial: [2]string{"float t = y * pow(x, y - 1); d = g * t;", "float t = r * log(x); d = g * t;"},
		Reads:     [2]BinReads{{X: true, Y: true}, {X: true, R: true}},
		Ref: func(x, y float64) (float64, float64, float64) {
			r := math.Pow(x, y)
			return r, y * math.Pow(x, y-1), r * math.Log(x)
		},
		Positive: true,
	},
}
