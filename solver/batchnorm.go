package solver

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// PyTorch's defaults for nn.BatchNorm1d/2d.
const (
	DefaultBNEps      = 1e-5
	DefaultBNMomentum = 0.1
)

// BatchNorm normalises each channel over the batch and the spatial positions,
// then scales and shifts it: y = weight*(x-mean)/sqrt(var+Eps) + bias, as
// PyTorch's nn.BatchNorm2d on C×H×W input and nn.BatchNorm1d on C×1×1 input
// (after a linear layer).
//
// In training mode (Pass.Train) mean and var are the batch's (biased variance)
// and the running statistics are updated, running = (1-Momentum)*running +
// Momentum*batch, with the unbiased variance. In eval mode the running
// statistics are used and left alone.
//
// Caller's contract: a training-mode Forward needs more than one value per
// channel, p.N*H*W > 1. PyTorch raises an error otherwise; here the output is
// then just bias and the input gradient zero (finite, but nothing learns), so
// a scheduler that hands out batches must not give a network with
// BatchNorm1d a batch of one sample to train on.
//
// Backward differentiates whichever mode the last Forward ran in: through
// the batch statistics after a training Forward, with the running statistics
// held constant after an eval Forward (what PyTorch's autograd gives for a
// module in eval mode).
type BatchNorm struct {
	Base
	Eps, Momentum float32
	C, HW         int // channels and positions per channel of one sample

	// Scratch of C elements, allocated once in Bind: the batch mean and
	// inverse standard deviation of the last training Forward, and for an
	// eval-mode Backward the constants 1 and 0 and 1/sqrt(running_var+Eps).
	saveMean, saveInvStd gpu.Buffer
	ones, zeros, evalInv gpu.Buffer
	trained              bool // the last Forward used batch statistics
	// Running statistics a replayed training Forward (Pass.Replay) updates
	// instead of the layer's own, which the Forward it recomputes already
	// updated; C elements each, allocated at the first replay.
	replayMean, replayVar gpu.Buffer
}

var _ Layer = (*BatchNorm)(nil)

// NewBatchNorm returns a batch-normalisation layer. Zero eps or momentum
// select PyTorch's defaults (1e-5, 0.1); the channel count comes from Setup.
func NewBatchNorm(name string, eps, momentum float32) *BatchNorm {
	if eps == 0 {
		eps = DefaultBNEps
	}
	if momentum == 0 {
		momentum = DefaultBNMomentum
	}
	return &BatchNorm{Base: Base{LayerName: name}, Eps: eps, Momentum: momentum}
}

// Kind implements Layer.
func (*BatchNorm) Kind() string { return "batchnorm" }

// Setup implements Layer. The output shape is the input shape.
func (l *BatchNorm) Setup(in []Shape) (Shape, error) {
	s, err := one("batchnorm", in)
	if err != nil {
		return Shape{}, err
	}
	switch {
	case s.C <= 0 || s.H <= 0 || s.W <= 0:
		return Shape{}, fmt.Errorf("solver: batchnorm %s: input shape %v", l.LayerName, s)
	case !(l.Eps > 0) || math.IsInf(float64(l.Eps), 0):
		return Shape{}, fmt.Errorf("solver: batchnorm %s: eps %v, want > 0", l.LayerName, l.Eps)
	case !(l.Momentum > 0 && l.Momentum <= 1):
		return Shape{}, fmt.Errorf("solver: batchnorm %s: momentum %v, want in (0, 1]", l.LayerName, l.Momentum)
	}
	l.C, l.HW = s.C, s.H*s.W
	return s, nil
}

// Params implements Layer: weight (ones) and bias (zeros), one per channel.
func (l *BatchNorm) Params() []ParamSpec {
	return []ParamSpec{
		{Name: "weight", Dims: []int{l.C}, Init: InitOnes},
		{Name: "bias", Dims: []int{l.C}, Init: InitZeros},
	}
}

// State implements Layer: the running statistics, as in PyTorch's
// state_dict (its num_batches_tracked counter is not kept: it only matters
// when momentum is None, which we do not support).
func (l *BatchNorm) State() []ParamSpec {
	return []ParamSpec{
		{Name: "running_mean", Dims: []int{l.C}, Init: InitZeros},
		{Name: "running_var", Dims: []int{l.C}, Init: InitOnes},
	}
}

// Bind implements Layer and allocates the per-channel scratch, which does
// not depend on the batch size.
func (l *BatchNorm) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	l.Base.Bind(b, params, grads, state)
	if l.saveMean == nil || l.saveMean.Len() != l.C {
		l.saveMean, l.saveInvStd = b.Alloc(l.C), b.Alloc(l.C)
		l.ones, l.zeros, l.evalInv = b.Alloc(l.C), b.Alloc(l.C), b.Alloc(l.C)
		b.Fill(l.ones, 1)
	}
}

func (l *BatchNorm) geom(n int) gpu.BNGeom {
	return gpu.BNGeom{N: n, C: l.C, HW: l.HW, Eps: l.Eps, Momentum: l.Momentum}
}

// Forward implements Layer. x, y: N×C×HW.
func (l *BatchNorm) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	g := l.geom(p.N)
	weight, bias, runMean, runVar := l.P[0], l.P[1], l.S[0], l.S[1]
	l.trained = p.Train
	if p.Train {
		if p.Replay {
			// The same kernel on the same input: the same output and batch
			// statistics bit for bit; the running statistics it updates
			// are thrown away.
			if l.replayMean == nil || l.replayMean.Len() != l.C {
				l.replayMean, l.replayVar = p.B.Alloc(l.C), p.B.Alloc(l.C)
			}
			runMean, runVar = l.replayMean, l.replayVar
		}
		p.B.BatchNormTrain(g, out, in[0], weight, bias, runMean, runVar, l.saveMean, l.saveInvStd)
		return
	}
	p.B.BatchNormInfer(g, out, in[0], weight, bias, runMean, runVar)
}

// BackwardReads implements BackwardReader: x (the batch statistics were
// saved by Forward).
func (*BatchNorm) BackwardReads(bool) (in, out bool) { return true, false }

// Backward implements Layer. After a training Forward it is the closed form
// through the batch statistics; after an eval Forward the normalisation is a
// fixed affine map per channel, so
//
//	dx = weight*dy/sqrt(running_var+Eps)
//	dweight = Σ dy*(x-running_mean)/sqrt(running_var+Eps), dbias = Σ dy.
func (l *BatchNorm) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	var dw, db gpu.Buffer
	if paramGrads {
		dw, db = l.G[0], l.G[1]
	}
	g := l.geom(p.N)
	if l.trained {
		if din[0] != nil || paramGrads {
			p.B.BatchNormBackward(g, din[0], dw, db, dout, in[0], l.P[0], l.saveMean, l.saveInvStd)
		}
		return
	}
	runMean, runVar := l.S[0], l.S[1]
	if paramGrads {
		// evalInv = 1/sqrt(running_var+Eps), written by the inference kernel
		// on a 1×C×1 tensor of ones; the backward kernel's parameter sums
		// with (running_mean, evalInv) in place of the batch statistics are
		// exactly dweight and dbias above.
		one := gpu.BNGeom{N: 1, C: l.C, HW: 1, Eps: l.Eps}
		p.B.BatchNormInfer(one, l.evalInv, l.ones, l.ones, l.zeros, l.zeros, runVar)
		p.B.BatchNormBackward(g, nil, dw, db, dout, in[0], l.P[0], runMean, l.evalInv)
	}
	if din[0] != nil {
		// dx = weight*(dy-0)/sqrt(running_var+Eps) + 0.
		p.B.BatchNormInfer(g, din[0], dout, l.P[0], l.zeros, l.zeros, runVar)
	}
}
