package state

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/wire"
)

// Describe fills s's optimizer hyper-parameters and learning-rate schedule
// from the hub's optimizer and schedule, so that a worker can build the same
// optimizer with NewOptimizer. It fails with ErrUnsupported for an optimizer
// the wire cannot describe (another type, or Adam with betas or epsilon
// other than NewAdam's, which the session does not carry) or a schedule of
// an unknown type.
func Describe(s *wire.Session, opt solver.Optimizer, sched solver.Schedule) error {
	switch o := opt.(type) {
	case *solver.SGD:
		s.Momentum, s.WeightDecay, s.Nesterov = o.Momentum, o.WeightDecay, o.Nesterov
	case *solver.Adam:
		if o.Beta1 != 0.9 || o.Beta2 != 0.999 || o.Eps != 1e-8 {
			return fmt.Errorf("%w: Adam with β1 %v, β2 %v, ε %v (the session carries only the defaults)",
				ErrUnsupported, o.Beta1, o.Beta2, o.Eps)
		}
		s.Momentum, s.WeightDecay, s.Nesterov = 0, o.WeightDecay, false
	default:
		return fmt.Errorf("%w: optimizer %T", ErrUnsupported, opt)
	}
	switch c := sched.(type) {
	case solver.Constant:
		s.LR = wire.Schedule{Kind: "constant", Base: float32(c)}
	case solver.StepLR:
		s.LR = wire.Schedule{Kind: "step", Base: c.Base, Gamma: c.Gamma, Every: c.Every}
	case solver.Cosine:
		s.LR = wire.Schedule{Kind: "cosine", Base: c.Base, Min: c.Min, Total: c.Total, Warmup: c.Warmup}
	default:
		return fmt.Errorf("%w: schedule %T", ErrUnsupported, sched)
	}
	return nil
}

// NewOptimizer builds the optimizer named name (the state's
// OptimizerState.Name) over n parameters with the session's
// hyper-parameters: the inverse of Describe.
func NewOptimizer(b gpu.Backend, name string, n int, s wire.Session) (solver.Optimizer, error) {
	opt, err := solver.NewOptimizer(b, name, n, s.Momentum, s.WeightDecay, s.Nesterov)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return opt, nil
}

// NewSchedule rebuilds the schedule Describe wrote.
func NewSchedule(w wire.Schedule) (solver.Schedule, error) {
	switch w.Kind {
	case "constant":
		return solver.Constant(w.Base), nil
	case "step":
		return solver.StepLR{Base: w.Base, Gamma: w.Gamma, Every: w.Every}, nil
	case "cosine":
		return solver.Cosine{Base: w.Base, Min: w.Min, Total: w.Total, Warmup: w.Warmup}, nil
	}
	return nil, fmt.Errorf("%w: schedule kind %q", ErrUnsupported, w.Kind)
}
