package gpu

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// The elementwise operator table. Every unary elementwise operator (an
// activation: forward and backward, up to two float parameters) is one
// UnaryOp in unaryOps below, and everything else is generated from it:
//
//   - gpu/cpu runs Forward and Backward;
//   - gpu/opencl builds the kernels act_param and act_param_backward from
//     CLForward and CLBackward, one switch case per entry
//     (gpu/opencl/actgen.go);
//   - models names the layer kind Name in model files and stores Params
//     under their Name;
//   - models/onnx imports the ONNX operator ONNX with the attributes or
//     constant inputs Params name, and exports it back the same way;
//   - gpu/gputest checks every entry on every backend against Ref (values,
//     derivatives, central differences) for each parameter set in Tests.
//
// Adding an operator is adding its kind to the constants in act.go and its
// entry here (docs/engine.md, "Adding an operator").

// UnaryOp describes one unary elementwise operator y = f(x; alpha, beta).
type UnaryOp struct {
	Kind ActKind
	// Name is the layer kind in model files and the Act's String.
	Name string
	// Params are the operator's parameters, in order Act.Alpha then
	// Act.Beta (at most two).
	Params []Param
	// Check validates the parameters; nil means each must be finite.
	Check func(alpha, beta float32) error
	// FromOutput reports whether the backward pass can be given y in place
	// of x (the derivative is a function of y); nil means never.
	FromOutput func(alpha, beta float32) bool
	// Forward sets y[i] = f(x[i]) for i < len(x) (len(y) >= len(x)); the
	// CPU backend's kernel, called on ranges of the tensor. It must round
	// the same way on every platform (no fused multiply-add: convert each
	// product to float32 where Go might fuse it).
	Forward func(a Act, y, x []float32)
	// Backward sets dx[i] = dy[i]·f'(x[i]) from t, which is x, or y when
	// FromOutput. At a kink the derivative is PyTorch's.
	Backward func(a Act, dx, dy, t []float32)
	// CLForward is OpenCL C statements that set float r from float v (the
	// input) and the parameters a and b: the OpenCL backend's forward. The
	// kernels are built without contraction (FP_CONTRACT off): write each
	// rounding the Go code makes as its own statement.
	CLForward string
	// CLBackward is OpenCL C statements that set float r from g (dy), v (t:
	// x, or y when FromOutput) and a, b.
	CLBackward string
	// Ref is the value and derivative at x from the definition, in float64
	// (the tests' reference; derivatives at kinks as Backward has them).
	Ref func(x, alpha, beta float64) (y, d float64)
	// Positive marks an operator defined for x > 0 only (tests draw x > 0).
	Positive bool
	// ONNX is the ONNX operator that maps to this entry with Params as its
	// attributes or constant inputs; "" when there is none (ReLU6 and SiLU
	// export as other operators: models/onnx).
	ONNX string
	// Tests are the parameter sets the conformance suite checks; nil means
	// one set of the Params' defaults.
	Tests [][2]float32
}

// Param is one parameter of a UnaryOp.
type Param struct {
	// Name is the parameter's field in model files (models.Layer): alpha,
	// beta, min or max (min and max are absent when infinite).
	Name string
	// ONNXAttr names the ONNX attribute that holds it, or ONNXInput (> 0)
	// the input that holds it as a constant scalar; Default is the value
	// when the attribute or an optional input is absent.
	ONNXAttr  string
	ONNXInput int
	Default   float32
	// Required: an ONNX node without it is refused (a required input).
	Required bool
}

// Act returns the activation of op's kind with the parameters p (missing
// ones zero).
func (op UnaryOp) Act(p ...float32) Act {
	a := Act{Kind: op.Kind}
	if len(p) > 0 {
		a.Alpha = p[0]
	}
	if len(p) > 1 {
		a.Beta = p[1]
	}
	return a
}

// TestActs are the activations the conformance suite checks for op
// (UnaryOp.Tests, or the defaults).
func (op UnaryOp) TestActs() []Act {
	if op.Tests == nil {
		var d [2]float32
		for i, p := range op.Params {
			d[i] = p.Default
		}
		return []Act{op.Act(d[0], d[1])}
	}
	out := make([]Act, len(op.Tests))
	for i, t := range op.Tests {
		out[i] = op.Act(t[0], t[1])
	}
	return out
}

// UnaryOps returns the table, in kind order (a copy: the table itself is
// never written).
func UnaryOps() []UnaryOp { return append([]UnaryOp(nil), unaryOps[:]...) }

// UnaryOpNamed returns the entry whose Name is name.
func UnaryOpNamed(name string) (UnaryOp, bool) {
	for _, op := range unaryOps {
		if op.Name == name {
			return op, true
		}
	}
	return UnaryOp{}, false
}

// UnaryOpONNX returns the entry that the ONNX operator opType maps to.
func UnaryOpONNX(opType string) (UnaryOp, bool) {
	for _, op := range unaryOps {
		if op.ONNX != "" && op.ONNX == opType {
			return op, true
		}
	}
	return UnaryOp{}, false
}

// Helpers of the entries.

func always(_, _ float32) bool { return true }

// sigmoid64 is the logistic function in float64.
func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// keep returns v where c is 1 and +0 where it is 0, without a branch: the
// conditions of the backward passes depend on the data and a branch on them
// mispredicts often on activations. Conditions are combined with & of b2u,
// not &&, which would branch.
func keep(v float32, c uint32) float32 {
	return math.Float32frombits(math.Float32bits(v) & -c)
}

// b2u is 1 for true, 0 for false; the compiler makes it a SETcc.
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// unaryOps is the table, indexed by kind-1. It is never written: read it
// through Act.Op, UnaryOps, UnaryOpNamed and UnaryOpONNX. The transcendental
// kinds compute in float64 and round once on the CPU (within an ulp of
// PyTorch's float32); OpenCL uses the device's exp and tanh (within a few
// ulp). Every other operation rounds alike on both, FP_CONTRACT being off.
var unaryOps = [numKinds - 1]UnaryOp{
	KindReLU - 1: {
		Kind: KindReLU, Name: "relu", ONNX: "Relu", FromOutput: always,
		// SIMD kernels: max(v, 0), NaN passes through, -0 becomes +0; the
		// gradient passes where x > 0 (where y > 0).
		Forward:  func(_ Act, y, x []float32) { vec.ReLU(y, x) },
		Backward: func(_ Act, dx, dy, t []float32) { vec.ReLUBackward(dx, dy, t) },
		// The OpenCL backend runs its own kernels for ReLU and ReLU6
		// (elementwise.cl's act, act4 and the fused epilogues); these are
		// the same conditions, and a test holds the two to the same bits.
		CLForward:  "r = v > 0 ? v : 0; if (v != v) r = v;",
		CLBackward: "r = v > 0 ? g : 0;",
		Ref: func(x, _, _ float64) (float64, float64) {
			if x > 0 {
				return x, 1
			}
			return 0, 0
		},
	},
	KindReLU6 - 1: {
		Kind: KindReLU6, Name: "relu6", FromOutput: always, // ONNX: exported as Clip(0, 6)
		Forward:    func(_ Act, y, x []float32) { vec.ReLU6(y, x) },                   // min(max(v, 0), 6)
		Backward:   func(_ Act, dx, dy, t []float32) { vec.ReLU6Backward(dx, dy, t) }, // dy where 0 < x < 6
		CLForward:  "r = v > 0 ? v : 0; if (r > 6) r = 6; if (v != v) r = v;",
		CLBackward: "r = (v > 0 && v < 6) ? g : 0;",
		Ref: func(x, _, _ float64) (float64, float64) {
			switch {
			case x <= 0:
				return 0, 0
			case x >= 6:
				return 6, 0
			}
			return x, 1
		},
	},
	KindSigmoid - 1: {
		Kind: KindSigmoid, Name: "sigmoid", ONNX: "Sigmoid", FromOutput: always,
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = float32(1 / (1 + math.Exp(-float64(v))))
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from y: dy·(1-y)·y
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, y := range ts {
				dxs[i] = dys[i] * (1 - y) * y
			}
		},
		CLForward:  "r = 1.0f / (1.0f + exp(-v));",
		CLBackward: "r = g * (1 - v) * v;",
		Ref: func(x, _, _ float64) (float64, float64) {
			y := sigmoid64(x)
			return y, y * (1 - y)
		},
	},
	KindHardSigmoid - 1: {
		Kind: KindHardSigmoid, Name: "hardsigmoid", ONNX: "HardSigmoid", FromOutput: always,
		Params: []Param{{Name: "alpha", ONNXAttr: "alpha", Default: 0.2}, {Name: "beta", ONNXAttr: "beta", Default: 0.5}},
		Forward: func(a Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			al, be := a.Alpha, a.Beta
			for i, v := range xs {
				// The conversion rounds the product, so no platform fuses a
				// multiply-add here (Go may, on arm64): the same bits everywhere.
				ys[i] = min(max(float32(al*v)+be, 0), 1)
			}
		},
		Backward: func(a Act, dxs, dys, ts []float32) {
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			// 0 < y < 1 exactly where 0 < alpha*x + beta < 1.
			al := a.Alpha
			for i, y := range ts {
				dxs[i] = keep(dys[i]*al, b2u(y > 0)&b2u(y < 1))
			}
		},
		CLForward:  "float t = a * v; t = t + b; r = t < 0 ? 0 : (t > 1 ? 1 : t);",
		CLBackward: "r = (v > 0 && v < 1) ? g * a : 0;",
		Ref: func(x, al, be float64) (float64, float64) {
			t := float64(al*x) + be
			switch {
			case t <= 0:
				return 0, 0
			case t >= 1:
				return 1, 0
			}
			return t, al
		},
		// PyTorch's Hardsigmoid (1/6, 0.5) and ONNX's default (0.2, 0.5).
		Tests: [][2]float32{{1.0 / 6, 0.5}, {0.2, 0.5}},
	},
	KindHardSwish - 1: {
		Kind: KindHardSwish, Name: "hardswish", ONNX: "HardSwish", // not monotonic: from x
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = v * min(max(v+3, 0), 6) / 6
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // dy·(x/3 + 0.5) on [-3, 3]
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, x := range ts {
				switch {
				case x < -3:
					dxs[i] = 0
				case x <= 3:
					dxs[i] = dys[i] * (x/3 + 0.5)
				default:
					dxs[i] = dys[i]
				}
			}
		},
		CLForward:  "float t = v + 3; t = t < 0 ? 0 : (t > 6 ? 6 : t); r = v * t / 6;",
		CLBackward: "r = v < -3 ? 0 : (v <= 3 ? g * (v / 3 + 0.5f) : g);",
		Ref: func(x, _, _ float64) (float64, float64) {
			switch {
			case x < -3:
				return 0, 0
			case x <= 3:
				return x * (x + 3) / 6, x/3 + 0.5
			}
			return x, 1
		},
	},
	KindTanh - 1: {
		Kind: KindTanh, Name: "tanh", ONNX: "Tanh", FromOutput: always,
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = vec.Tanh32(v)
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from y: dy·(1-y²)
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, y := range ts {
				dxs[i] = dys[i] * (1 - float32(y*y)) // rounded product: no fused multiply-add
			}
		},
		CLForward:  "r = tanh(v);",
		CLBackward: "float yy = v * v; r = g * (1 - yy);",
		Ref: func(x, _, _ float64) (float64, float64) {
			y := math.Tanh(x)
			return y, 1 - float64(y*y)
		},
	},
	KindLeakyReLU - 1: {
		Kind: KindLeakyReLU, Name: "leakyrelu", ONNX: "LeakyRelu",
		Params: []Param{{Name: "alpha", ONNXAttr: "alpha", Default: 0.01}},
		// From y when alpha >= 0 (y > 0 exactly where x > 0), else from x.
		FromOutput: func(alpha, _ float32) bool { return alpha >= 0 },
		Forward: func(a Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			// Branch-free (Go's min and max are): a branch on the sign
			// mispredicts half the time on activations, 9x slower here.
			al := a.Alpha
			for i, v := range xs {
				ys[i] = max(v, 0) + float32(al*min(v, 0)) // NaN passes through
			}
		},
		Backward: func(a Act, dxs, dys, ts []float32) {
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			al := a.Alpha
			for i, t := range ts {
				d := dys[i]
				pos := b2u(t > 0)
				dxs[i] = math.Float32frombits(math.Float32bits(keep(d, pos)) | math.Float32bits(keep(d*al, pos^1)))
			}
		},
		CLForward:  "r = v > 0 ? v : a * v;",
		CLBackward: "r = v > 0 ? g : g * a;",
		Ref: func(x, al, _ float64) (float64, float64) {
			if x > 0 {
				return x, 1
			}
			return al * x, al
		},
		Tests: [][2]float32{{0.01}, {-0.5}}, // slopes of either sign
	},
	KindClip - 1: {
		Kind: KindClip, Name: "clip", ONNX: "Clip", FromOutput: always,
		// ONNX's bounds are optional inputs from opset 11 (attributes
		// before: models/onnx reads those itself).
		Params: []Param{{Name: "min", ONNXInput: 1, Default: float32(math.Inf(-1))},
			{Name: "max", ONNXInput: 2, Default: float32(math.Inf(1))}},
		Check: func(lo, hi float32) error {
			if math.IsNaN(float64(lo)) || math.IsNaN(float64(hi)) || lo > hi ||
				math.IsInf(float64(lo), 1) || math.IsInf(float64(hi), -1) {
				return fmt.Errorf("gpu: clip bounds [%g, %g]: want lo <= hi, lo < +Inf, hi > -Inf", lo, hi)
			}
			return nil
		},
		Forward: func(a Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			lo, hi := a.Alpha, a.Beta
			for i, v := range xs {
				ys[i] = min(max(v, lo), hi) // NaN passes through
			}
		},
		Backward: func(a Act, dxs, dys, ts []float32) {
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			// lo < y < hi exactly where lo < x < hi, as PyTorch's hardtanh
			// (so Clip(0, 6) differentiates as ReLU6 does).
			lo, hi := a.Alpha, a.Beta
			for i, y := range ts {
				dxs[i] = keep(dys[i], b2u(y > lo)&b2u(y < hi))
			}
		},
		CLForward:  "r = v < a ? a : (v > b ? b : v);",
		CLBackward: "r = (v > a && v < b) ? g : 0;",
		Ref: func(x, lo, hi float64) (float64, float64) {
			switch {
			case x <= lo:
				return lo, 0
			case x >= hi:
				return hi, 0
			}
			return x, 1
		},
		// Two-sided, one-sided either way, and ReLU6's.
		Tests: [][2]float32{{-1, 2}, {float32(math.Inf(-1)), 0.5}, {-0.25, float32(math.Inf(1))}, {0, 6}},
	},
	KindSiLU - 1: {
		Kind: KindSiLU, Name: "silu", // ONNX: exported as x·Sigmoid(x), as PyTorch writes it
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = float32(float64(v) / (1 + math.Exp(-float64(v))))
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) {
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			// PyTorch's silu_backward: dy·s·(1 + x·(1 - s)), s = sigmoid(x).
			for i, x := range ts {
				s := float32(1 / (1 + math.Exp(-float64(x))))
				xs := float32(x * (1 - s)) // the conversion rounds: no fused multiply-add
				dxs[i] = dys[i] * s * (1 + xs)
			}
		},
		CLForward:  "r = v / (1.0f + exp(-v));",
		CLBackward: "float s = 1.0f / (1.0f + exp(-v)); float xs = v * (1 - s); r = g * s * (1 + xs);",
		Ref: func(x, _, _ float64) (float64, float64) {
			s := sigmoid64(x)
			return x * s, s * (1 + float64(x*(1-s)))
		},
	},
	KindElu - 1: {
		Kind: KindElu, Name: "elu", ONNX: "Elu",
		Params: []Param{{Name: "alpha", ONNXAttr: "alpha", Default: 1}},
		Forward: func(a Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			al := float64(a.Alpha)
			for i, v := range xs {
				ys[i] = v
				if !(v > 0) {
					ys[i] = float32(al * math.Expm1(float64(v))) // NaN passes through
				}
			}
		},
		Backward: func(a Act, dxs, dys, ts []float32) { // from x: dy, or dy·alpha·exp(x) where x <= 0
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			al := float64(a.Alpha)
			for i, x := range ts {
				dxs[i] = dys[i]
				if !(x > 0) {
					dxs[i] = float32(float64(dys[i]) * al * math.Exp(float64(x)))
				}
			}
		},
		CLForward:  "r = v > 0 ? v : a * expm1(v);",
		CLBackward: "r = v > 0 ? g : g * a * exp(v);",
		Ref: func(x, al, _ float64) (float64, float64) {
			if x > 0 {
				return x, 1
			}
			return al * math.Expm1(x), al * math.Exp(x)
		},
		Tests: [][2]float32{{1}, {0.5}},
	},
	KindSelu - 1: {
		Kind: KindSelu, Name: "selu", ONNX: "Selu",
		// ONNX's defaults are PyTorch's constants rounded to float32.
		Params: []Param{{Name: "alpha", ONNXAttr: "alpha", Default: 1.67326319217681884765625},
			{Name: "beta", ONNXAttr: "gamma", Default: 1.05070102214813232421875}},
		Forward: func(a Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			al, sc := float64(a.Alpha), float64(a.Beta)
			for i, v := range xs {
				x := float64(v)
				if !(v > 0) {
					x = al * math.Expm1(x)
				}
				ys[i] = float32(sc * x)
			}
		},
		Backward: func(a Act, dxs, dys, ts []float32) { // from x
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			al, sc := float64(a.Alpha), float64(a.Beta)
			for i, x := range ts {
				d := sc
				if !(x > 0) {
					d = sc * al * math.Exp(float64(x))
				}
				dxs[i] = float32(float64(dys[i]) * d)
			}
		},
		CLForward:  "r = b * (v > 0 ? v : a * expm1(v));",
		CLBackward: "r = v > 0 ? g * b : g * (b * a * exp(v));",
		Ref: func(x, al, sc float64) (float64, float64) {
			if x > 0 {
				return sc * x, sc
			}
			return sc * al * math.Expm1(x), sc * al * math.Exp(x)
		},
	},
	KindSoftplus - 1: {
		Kind: KindSoftplus, Name: "softplus", ONNX: "Softplus",
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = v
				if !(v > 20) { // PyTorch's threshold: beyond it, x (within 2e-9)
					ys[i] = float32(math.Log1p(math.Exp(float64(v))))
				}
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from x: dy·sigmoid(x), dy beyond 20
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, x := range ts {
				dxs[i] = dys[i]
				if !(x > 20) {
					dxs[i] = float32(float64(dys[i]) / (1 + math.Exp(-float64(x))))
				}
			}
		},
		CLForward:  "r = v > 20 ? v : log1p(exp(v));",
		CLBackward: "r = v > 20 ? g : g / (1.0f + exp(-v));",
		Ref: func(x, _, _ float64) (float64, float64) {
			if x > 20 {
				return x, 1
			}
			return math.Log1p(math.Exp(x)), sigmoid64(x)
		},
	},
	KindSoftsign - 1: {
		Kind: KindSoftsign, Name: "softsign", ONNX: "Softsign",
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = v / (1 + float32(math.Abs(float64(v))))
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from x: dy / (1 + |x|)²
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, x := range ts {
				d := 1 + float32(math.Abs(float64(x)))
				dd := float32(d * d)
				dxs[i] = dys[i] / dd
			}
		},
		CLForward:  "r = v / (1 + fabs(v));",
		CLBackward: "float d = 1 + fabs(v); float dd = d * d; r = g / dd;",
		Ref: func(x, _, _ float64) (float64, float64) {
			d := 1 + math.Abs(x)
			return x / d, 1 / (d * d)
		},
	},
	KindExp - 1: {
		Kind: KindExp, Name: "exp", ONNX: "Exp", FromOutput: always,
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = float32(math.Exp(float64(v)))
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from y: dy·y
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, y := range ts {
				dxs[i] = dys[i] * y
			}
		},
		CLForward:  "r = exp(v);",
		CLBackward: "r = g * v;",
		Ref: func(x, _, _ float64) (float64, float64) {
			y := math.Exp(x)
			return y, y
		},
	},
	KindNeg - 1: {
		Kind: KindNeg, Name: "neg", ONNX: "Neg", FromOutput: always, // the derivative reads neither
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = -v
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) {
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i := range ts {
				dxs[i] = -dys[i]
			}
		},
		CLForward:  "r = -v;",
		CLBackward: "r = -g;",
		Ref:        func(x, _, _ float64) (float64, float64) { return -x, -1 },
	},
	KindAbs - 1: {
		Kind: KindAbs, Name: "abs", ONNX: "Abs",
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = float32(math.Abs(float64(v)))
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from x: dy·sign(x), 0 at 0 (PyTorch's sgn)
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, x := range ts {
				d := dys[i]
				dxs[i] = math.Float32frombits(math.Float32bits(keep(d, b2u(x > 0))) | math.Float32bits(keep(-d, b2u(x < 0))))
			}
		},
		CLForward:  "r = fabs(v);",
		CLBackward: "r = v > 0 ? g : (v < 0 ? -g : 0);",
		Ref: func(x, _, _ float64) (float64, float64) {
			switch {
			case x > 0:
				return x, 1
			case x < 0:
				return -x, -1
			}
			return 0, 0
		},
	},
	KindSqrt - 1: {
		Kind: KindSqrt, Name: "sqrt", ONNX: "Sqrt", FromOutput: always, Positive: true,
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = float32(math.Sqrt(float64(v))) // correctly rounded, as float32's own
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from y: dy / (2y)
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, y := range ts {
				dxs[i] = dys[i] / (2 * y)
			}
		},
		CLForward:  "r = sqrt(v);",
		CLBackward: "r = g / (2 * v);",
		Ref: func(x, _, _ float64) (float64, float64) {
			y := math.Sqrt(x)
			return y, 1 / (2 * y)
		},
	},
	KindReciprocal - 1: {
		Kind: KindReciprocal, Name: "reciprocal", ONNX: "Reciprocal", FromOutput: always,
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = 1 / v
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from y: -dy·y²
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, y := range ts {
				yy := float32(y * y) // rounded: no fused multiply-add
				dxs[i] = dys[i] * -yy
			}
		},
		CLForward:  "r = 1 / v;",
		CLBackward: "float yy = v * v; r = g * -yy;",
		Ref:        func(x, _, _ float64) (float64, float64) { return 1 / x, -1 / (x * x) },
	},
	KindErf - 1: {
		Kind: KindErf, Name: "erf", ONNX: "Erf",
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = float32(math.Erf(float64(v)))
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from x: dy·2/√π·exp(-x²)
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, x := range ts {
				v := float64(x)
				dxs[i] = float32(float64(dys[i]) * (2 / math.SqrtPi) * math.Exp(-v*v))
			}
		},
		CLForward:  "r = erf(v);",
		CLBackward: "float vv = v * v; r = g * (1.1283791670955126f * exp(-vv));",
		Ref: func(x, _, _ float64) (float64, float64) {
			return math.Erf(x), 2 / math.SqrtPi * math.Exp(-x*x)
		},
	},
	KindPow - 1: {
		Kind: KindPow, Name: "pow", ONNX: "Pow", Positive: true, // x < 0 only with an integer exponent
		// ONNX's exponent is the second input; cotrain takes a constant one.
		Params: []Param{{Name: "alpha", ONNXInput: 1, Required: true}},
		Forward: func(a Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			p := float64(a.Alpha)
			for i, v := range xs {
				ys[i] = float32(math.Pow(float64(v), p))
			}
		},
		Backward: func(a Act, dxs, dys, ts []float32) { // from x: dy·p·x^(p-1), 0 for p = 0 (PyTorch's)
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			p := float64(a.Alpha)
			for i, x := range ts {
				d := 0.0
				if p != 0 {
					d = p * math.Pow(float64(x), p-1)
				}
				dxs[i] = float32(float64(dys[i]) * d)
			}
		},
		CLForward:  "r = pow(v, a);",
		CLBackward: "r = a == 0 ? 0 : g * (a * pow(v, a - 1));",
		Ref: func(x, p, _ float64) (float64, float64) {
			if p == 0 {
				return 1, 0
			}
			return math.Pow(x, p), p * math.Pow(x, p-1)
		},
		Tests: [][2]float32{{2}, {3}, {0.5}, {-1.5}},
	},
	KindLog - 1: {
		Kind: KindLog, Name: "log", ONNX: "Log", Positive: true,
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				ys[i] = float32(math.Log(float64(v)))
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from x: dy / x
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, x := range ts {
				dxs[i] = dys[i] / x
			}
		},
		CLForward:  "r = log(v);",
		CLBackward: "r = g / v;",
		Ref:        func(x, _, _ float64) (float64, float64) { return math.Log(x), 1 / x },
	},
	KindGelu - 1: {
		// ONNX's Gelu is an operator from opset 20; before it PyTorch
		// writes x·0.5·(1 + Erf(x/√2)), which imports as erf and binary
		// layers. Gelu's approximate="tanh" is refused by models/onnx.
		Kind: KindGelu, Name: "gelu", ONNX: "Gelu",
		Forward: func(_ Act, ys, xs []float32) {
			ys = ys[:len(xs)]
			for i, v := range xs {
				x := float64(v)
				ys[i] = float32(x * 0.5 * (1 + math.Erf(x/math.Sqrt2)))
			}
		},
		Backward: func(_ Act, dxs, dys, ts []float32) { // from x: dy·(Φ(x) + x·φ(x))
			dxs, dys = dxs[:len(ts)], dys[:len(ts)]
			for i, v := range ts {
				x := float64(v)
				cdf := float64(0.5 * (1 + math.Erf(x/math.Sqrt2)))
				pdf := math.Exp(-0.5*x*x) / math.Sqrt(2*math.Pi)
				dxs[i] = float32(float64(dys[i]) * (cdf + float64(x*pdf)))
			}
		},
		CLForward:  "float e = erf(v * 0.70710678118654752f); r = 0.5f * v * (1 + e);",
		CLBackward: "float cdf = 0.5f * (1 + erf(v * 0.70710678118654752f)); float vv = v * v; float pdf = exp(-0.5f * vv) * 0.39894228040143268f; r = g * (cdf + v * pdf);",
		Ref: func(x, _, _ float64) (float64, float64) {
			cdf := float64(0.5 * (1 + math.Erf(x/math.Sqrt2)))
			return x * cdf, cdf + float64(x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi))
		},
	},
}
