package gpu

import "fmt"

// Bias and activation fused into the kernels around a convolution or a
// fully connected layer.
//
// A convolution followed by a ReLU costs, unfused, five passes over its
// output besides the product: the bias added, the activation applied, then
// backward the activation's gradient written and read again by the bias
// gradient. A backend that implements ActFuser does the bias and the
// activation in the kernel that writes the output (OpenCL: the Winograd
// output transform, or one pass after the GEMM that adds the bias and
// clips together), and the activation's gradient and the bias gradient in
// one pass reading dy and y once.

// ActFuser is implemented by backends that can fuse a ReLU or ReLU6
// (FusesAct) into the passes around a convolution or a fully connected
// layer. Each method has the bits of the unfused calls it names, on the
// same backend; Unfused(b) runs those calls, for any Backend.
//
// Caller's duties (solver.Net keeps to them):
//  1. Pass an activation a with FusesAct(a); the others panic.
//  2. The activation is applied in place, over the layer's output: keep no
//     other copy of the pre-activation values, since nothing writes one.
//  3. ActivateBackwardBias reads y, the activation's output, as
//     ActivateBackward does for a FromOutput activation.
type ActFuser interface {
	// ConvForwardAct is ConvForward(g, y, x, w, bias, ws) then
	// Activate(a, y, y); with cols not nil, ConvForwardKeep(g, y, x, w,
	// bias, ws, cols) then Activate(a, y, y) (the backend is then a
	// ConvColumnKeeper, and cols came from its ConvKeepColumns).
	ConvForwardAct(a Act, g ConvGeom, y, x, w, bias, ws, cols Buffer)
	// BiasAct is AddBias(x, bias, n, c, hw) then Activate(a, x, x); a nil
	// bias adds none.
	BiasAct(a Act, x, bias Buffer, n, c, hw int)
	// LinearForwardAct is a fully connected layer's forward with a fused:
	// Gemm(false, true, n, out, in, 1, x, w, 0, y) then BiasAct(a, y, bias,
	// n, out, 1), for y n×out, x n×in, w out×in and bias out (nil: none).
	LinearForwardAct(a Act, y, x, w, bias Buffer, n, in, out int)
	// ActivateBackwardBias is ActivateBackward(a, dx, dy, y) then
	// BiasGrad(dbias, dx, n, c, hw): dx and dbias (n×c×hw and c) from the
	// activation's output gradient dy and output y.
	ActivateBackwardBias(a Act, dx, dbias, dy, y Buffer, n, c, hw int)
}

// FusesAct reports whether ActFuser takes a: ReLU and ReLU6, whose
// derivative is a function of the output and which commute with rounding
// to any storage precision (their bounds 0 and 6 are representable), so
// that clipping before the store gives the bits of clipping after it.
func FusesAct(a Act) bool { return a.Kind == KindReLU || a.Kind == KindReLU6 }

// MustFuse panics unless FusesAct(a): the ActFuser methods of every backend
// call it, since a caller that passes another activation is our bug.
func MustFuse(op string, a Act) {
	if !FusesAct(a) {
		panic(fmt.Sprintf("gpu: %s: activation %v is not fused (ReLU and ReLU6 are)", op, a))
	}
}

// Fuser returns b when it implements ActFuser, else Unfused(b).
func Fuser(b Backend) ActFuser {
	if f, ok := b.(ActFuser); ok {
		return f
	}
	return Unfused(b)
}

// Unfused returns an ActFuser whose methods run the separate calls of b
// that each method stands for: the reference the fused kernels are tested
// against, and what a backend without fused kernels runs.
func Unfused(b Backend) ActFuser { return unfused{b} }

type unfused struct{ b Backend }

func (u unfused) ConvForwardAct(a Act, g ConvGeom, y, x, w, bias, ws, cols Buffer) {
	MustFuse("ConvForwardAct", a)
	if cols != nil {
		k, ok := u.b.(ConvColumnKeeper)
		if !ok {
			panic("gpu: ConvForwardAct: kept columns on a backend that keeps none")
		}
		k.ConvForwardKeep(g, y, x, w, bias, ws, cols)
	} else {
		u.b.ConvForward(g, y, x, w, bias, ws)
	}
	u.b.Activate(a, y, y)
}

func (u unfused) BiasAct(a Act, x, bias Buffer, n, c, hw int) {
	MustFuse("BiasAct", a)
	if bias != nil {
		u.b.AddBias(x, bias, n, c, hw)
	}
	u.b.Activate(a, x, x)
}

func (u unfused) LinearForwardAct(a Act, y, x, w, bias Buffer, n, in, out int) {
	MustFuse("LinearForwardAct", a)
	u.b.Gemm(false, true, n, out, in, 1, x, w, 0, y)
	u.BiasAct(a, y, bias, n, out, 1)
}

func (u unfused) ActivateBackwardBias(a Act, dx, dbias, dy, y Buffer, n, c, hw int) {
	MustFuse("ActivateBackwardBias", a)
	u.b.ActivateBackward(a, dx, dy, y)
	u.b.BiasGrad(dbias, dx, n, c, hw)
}
