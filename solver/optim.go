package solver

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// Optimizer updates parameters from gradients. Every node of a cooperative
// run applies the same Step to the same merged gradient, so implementations
// must be deterministic and depend on nothing but their inputs and state.
type Optimizer interface {
	// Name is "sgd" or "adam".
	Name() string
	// Step updates the ranges of params from grads at learning rate lr.
	Step(params, grads gpu.Buffer, ranges []Range, lr float32)
	// State returns the optimizer's tensors (each as long as params) and its
	// step count, for saving.
	State() (tensors map[string]gpu.Buffer, steps int)
	// SetSteps restores the step count after the tensors were loaded.
	SetSteps(steps int)
}

// SGD is stochastic gradient descent with optional momentum, Nesterov
// momentum and L2 weight decay (PyTorch's torch.optim.SGD, dampening 0).
type SGD struct {
	B           gpu.Backend
	Momentum    float32
	WeightDecay float32
	Nesterov    bool
	velocity    gpu.Buffer
	steps       int
}

// NewSGD returns SGD over n parameters.
func NewSGD(b gpu.Backend, n int, momentum, weightDecay float32, nesterov bool) *SGD {
	return &SGD{B: b, Momentum: momentum, WeightDecay: weightDecay, Nesterov: nesterov, velocity: b.Alloc(n)}
}

// Name implements Optimizer.
func (*SGD) Name() string { return "sgd" }

// Step implements Optimizer.
func (s *SGD) Step(params, grads gpu.Buffer, ranges []Range, lr float32) {
	for _, r := range ranges {
		s.B.SGDStep(s.B.View(params, r.Off, r.Len), s.B.View(grads, r.Off, r.Len),
			s.B.View(s.velocity, r.Off, r.Len), lr, s.Momentum, s.WeightDecay, s.Nesterov)
	}
	s.steps++
}

// State implements Optimizer.
func (s *SGD) State() (map[string]gpu.Buffer, int) {
	return map[string]gpu.Buffer{"momentum": s.velocity}, s.steps
}

// SetSteps implements Optimizer.
func (s *SGD) SetSteps(n int) { s.steps = n }

// Adam is PyTorch's torch.optim.Adam (L2 weight decay added to the gradient).
type Adam struct {
	B                 gpu.Backend
	Beta1, Beta2, Eps float32
	WeightDecay       float32
	m, v              gpu.Buffer
	steps             int
}

// NewAdam returns Adam over n parameters with PyTorch's defaults
// (β1 0.9, β2 0.999, ε 1e-8).
func NewAdam(b gpu.Backend, n int, weightDecay float32) *Adam {
	return &Adam{B: b, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay, m: b.Alloc(n), v: b.Alloc(n)}
}

// Name implements Optimizer.
func (*Adam) Name() string { return "adam" }

// Step implements Optimizer.
func (a *Adam) Step(params, grads gpu.Buffer, ranges []Range, lr float32) {
	a.steps++
	for _, r := range ranges {
		a.B.AdamStep(a.B.View(params, r.Off, r.Len), a.B.View(grads, r.Off, r.Len),
			a.B.View(a.m, r.Off, r.Len), a.B.View(a.v, r.Off, r.Len),
			lr, a.Beta1, a.Beta2, a.Eps, a.WeightDecay, a.steps)
	}
}

// State implements Optimizer.
func (a *Adam) State() (map[string]gpu.Buffer, int) {
	return map[string]gpu.Buffer{"exp_avg": a.m, "exp_avg_sq": a.v}, a.steps
}

// SetSteps implements Optimizer.
func (a *Adam) SetSteps(n int) { a.steps = n }

// NewOptimizer builds an optimizer by name ("sgd", "adam") over n parameters.
func NewOptimizer(b gpu.Backend, name string, n int, momentum, weightDecay float32, nesterov bool) (Optimizer, error) {
	switch name {
	case "sgd":
		return NewSGD(b, n, momentum, weightDecay, nesterov), nil
	case "adam":
		return NewAdam(b, n, weightDecay), nil
	}
	return nil, fmt.Errorf("solver: unknown optimizer %q (want sgd or adam)", name)
}

// Schedule gives the learning rate at an iteration (0-based).
type Schedule interface {
	LR(iter int) float32
}

// Constant keeps the learning rate fixed.
type Constant float32

// LR implements Schedule.
func (c Constant) LR(int) float32 { return float32(c) }

// StepLR multiplies the rate by Gamma every Every iterations (PyTorch's StepLR).
type StepLR struct {
	Base  float32
	Gamma float32
	Every int
}

// LR implements Schedule.
func (s StepLR) LR(iter int) float32 {
	if s.Every <= 0 {
		return s.Base
	}
	return s.Base * float32(math.Pow(float64(s.Gamma), float64(iter/s.Every)))
}

// Cosine anneals from Base to Min over Total iterations (PyTorch's
// CosineAnnealingLR), after an optional linear warm-up of Warmup iterations.
type Cosine struct {
	Base, Min     float32
	Total, Warmup int
}

// LR implements Schedule.
func (c Cosine) LR(iter int) float32 {
	if iter < c.Warmup {
		return c.Base * float32(iter+1) / float32(c.Warmup)
	}
	span := c.Total - c.Warmup
	if span <= 0 {
		return c.Base
	}
	t := min(float64(iter-c.Warmup)/float64(span), 1)
	return c.Min + (c.Base-c.Min)*float32((1+math.Cos(math.Pi*t))/2)
}
