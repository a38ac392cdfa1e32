package solver

import (
	"fmt"
	"math"
	"reflect"
	"slices"

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
	views       viewCache // params, grads, velocity
}

// NewSGD returns SGD over n parameters.
func NewSGD(b gpu.Backend, n int, momentum, weightDecay float32, nesterov bool) *SGD {
	return &SGD{B: b, Momentum: momentum, WeightDecay: weightDecay, Nesterov: nesterov, velocity: b.Alloc(n)}
}

// Name implements Optimizer.
func (*SGD) Name() string { return "sgd" }

// Step implements Optimizer.
func (s *SGD) Step(params, grads gpu.Buffer, ranges []Range, lr float32) {
	v := s.views.get(s.B, ranges, params, grads, s.velocity)
	for i := range ranges {
		s.B.SGDStep(v[i][0], v[i][1], v[i][2], lr, s.Momentum, s.WeightDecay, s.Nesterov)
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
	views             viewCache // params, grads, m, v
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
	v := a.views.get(a.B, ranges, params, grads, a.m, a.v)
	for i := range ranges {
		a.B.AdamStep(v[i][0], v[i][1], v[i][2], v[i][3], lr, a.Beta1, a.Beta2, a.Eps, a.WeightDecay, a.steps)
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

// viewCache keeps an optimizer's views of its buffers over the trainable
// ranges from one Step to the next. A View is a new interface value, so
// making them afresh cost a few allocations per step, the only ones left in
// a steady-state training step. The views are rebuilt whenever the ranges
// or any buffer differ from the last call's.
type viewCache struct {
	ranges []Range
	bufs   []gpu.Buffer
	views  [][4]gpu.Buffer // per range, one view per buffer (at most 4)
}

// get returns the views of bufs (at most 4) over ranges, [range][buffer].
func (c *viewCache) get(b gpu.Backend, ranges []Range, bufs ...gpu.Buffer) [][4]gpu.Buffer {
	if c.valid(ranges, bufs) {
		return c.views
	}
	c.ranges = append(c.ranges[:0], ranges...)
	c.bufs = append(c.bufs[:0], bufs...)
	c.views = c.views[:0]
	for _, r := range ranges {
		var v [4]gpu.Buffer
		for j, buf := range bufs {
			if r.Off == 0 && r.Len == buf.Len() {
				v[j] = buf // the whole buffer needs no view
			} else {
				v[j] = b.View(buf, r.Off, r.Len)
			}
		}
		c.views = append(c.views, v)
	}
	return c.views
}

func (c *viewCache) valid(ranges []Range, bufs []gpu.Buffer) bool {
	if len(c.bufs) != len(bufs) || !slices.Equal(c.ranges, ranges) {
		return false
	}
	for i := range bufs {
		if !sameBuffer(c.bufs[i], bufs[i]) {
			return false
		}
	}
	return true
}

// sameBuffer reports whether a and b are certainly the same buffer. Buffers
// of comparable types (OpenCL's pointers) compare directly; host slices,
// which == would panic on, by their first element and length. Any other
// type counts as different, which only costs rebuilding the views.
func sameBuffer(a, b gpu.Buffer) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if ha, ok := a.(gpu.Host); ok {
		hb, ok := b.(gpu.Host)
		return ok && len(ha) == len(hb) && (len(ha) == 0 || &ha[0] == &hb[0])
	}
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
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
	return c.Min + float32((c.Base-c.Min)*float32((1+math.Cos(math.Pi*t))/2)) // float32(): not fused on any target
}
