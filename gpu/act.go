package gpu

import (
	"fmt"
	"math"
)

// ActKind names an elementwise activation function: an entry of the
// operator table (ops.go). Act adds its parameters.
type ActKind uint8

// The kinds of the table, in its order. A kind's number is part of no file
// or message (model files name the kind: UnaryOp.Name), but the OpenCL
// kernels switch on it, so a kind keeps its number once given.
const (
	KindReLU        ActKind = iota + 1 // max(x, 0)
	KindReLU6                          // min(max(x, 0), 6)
	KindSigmoid                        // 1 / (1 + exp(-x))
	KindHardSigmoid                    // min(max(alpha*x + beta, 0), 1) (ONNX HardSigmoid)
	KindHardSwish                      // x * min(max(x + 3, 0), 6) / 6
	KindTanh                           // tanh(x)
	KindLeakyReLU                      // x > 0 ? x : alpha*x
	KindClip                           // min(max(x, lo), hi); an absent bound is -Inf or +Inf
	KindSiLU                           // x * sigmoid(x) (PyTorch's SiLU, swish)
	KindElu                            // x > 0 ? x : alpha*(exp(x) - 1)
	KindSelu                           // beta * (x > 0 ? x : alpha*(exp(x) - 1)) (ONNX's gamma is beta)
	KindSoftplus                       // log(1 + exp(x)), x beyond 20 as x (PyTorch's threshold)
	KindSoftsign                       // x / (1 + |x|)
	KindExp                            // exp(x)
	KindNeg                            // -x
	KindAbs                            // |x|
	KindSqrt                           // sqrt(x)
	KindReciprocal                     // 1 / x
	KindErf                            // erf(x)
	KindPow                            // x^alpha, a constant exponent
	KindLog                            // log(x)
	KindGelu                           // x·Φ(x), Φ the normal distribution function (the exact GELU)
	numKinds                           // one past the last kind
)

// Act is an elementwise activation with its parameters: Alpha and Beta are
// the values of the kind's UnaryOp.Params, in order (HardSigmoid's alpha
// and beta, LeakyReLU's slope, Clip's lower and upper bound). Build one with
// the variables and constructors below, or from the table (UnaryOp.Act);
// the zero Act is invalid. Acts are comparable values: a layer keeps its
// own.
type Act struct {
	Kind        ActKind
	Alpha, Beta float32
}

// The activations without parameters.
var (
	ReLU      = Act{Kind: KindReLU}
	ReLU6     = Act{Kind: KindReLU6}
	Sigmoid   = Act{Kind: KindSigmoid}
	HardSwish = Act{Kind: KindHardSwish}
	Tanh      = Act{Kind: KindTanh}
	SiLU      = Act{Kind: KindSiLU}
)

// HardSigmoid returns min(max(alpha*x + beta, 0), 1). PyTorch's
// nn.Hardsigmoid is HardSigmoid(1/6, 0.5); ONNX's default is (0.2, 0.5).
func HardSigmoid(alpha, beta float32) Act {
	return Act{Kind: KindHardSigmoid, Alpha: alpha, Beta: beta}
}

// LeakyReLU returns x > 0 ? x : alpha*x (PyTorch's default alpha is 0.01).
func LeakyReLU(alpha float32) Act { return Act{Kind: KindLeakyReLU, Alpha: alpha} }

// Clip returns min(max(x, lo), hi); pass float32(math.Inf(-1)) or
// float32(math.Inf(1)) for a missing bound. NaN passes through.
func Clip(lo, hi float32) Act { return Act{Kind: KindClip, Alpha: lo, Beta: hi} }

// Op returns the table entry of a's kind; ok is false for a kind the table
// does not hold.
func (a Act) Op() (op UnaryOp, ok bool) {
	if a.Kind == 0 || int(a.Kind) > len(unaryOps) {
		return UnaryOp{}, false
	}
	return unaryOps[a.Kind-1], true
}

// String returns the activation's name as used in model files (the layer
// kind, UnaryOp.Name); parameters are not part of it.
func (a Act) String() string {
	if op, ok := a.Op(); ok {
		return op.Name
	}
	return fmt.Sprintf("act(%d)", uint8(a.Kind))
}

// Validate reports an unknown kind, or parameters the kind's entry refuses
// (by default: any that is NaN or infinite; UnaryOp.Check).
func (a Act) Validate() error {
	op, ok := a.Op()
	if !ok {
		return fmt.Errorf("gpu: unknown activation kind %d", uint8(a.Kind))
	}
	if op.Check != nil {
		return op.Check(a.Alpha, a.Beta)
	}
	for i, p := range op.Params {
		v := [2]float32{a.Alpha, a.Beta}[i]
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("gpu: %s %s %g: want a finite number", op.Name, p.Name, v)
		}
	}
	return nil
}

// MustValid panics on an invalid activation: layers validate theirs at
// construction, so one reaching a kernel is our bug.
func (a Act) MustValid() {
	if err := a.Validate(); err != nil {
		panic(err.Error())
	}
}

// FromOutput reports whether ActivateBackward takes the activation's output
// y = act(x) in place of x: true where the derivative is a function of y
// (UnaryOp.FromOutput), which lets a network drop x after the forward
// pass. An unknown kind reports false.
func (a Act) FromOutput() bool {
	op, ok := a.Op()
	return ok && op.FromOutput != nil && op.FromOutput(a.Alpha, a.Beta)
}
