package hub

import (
	"fmt"
	"math"
)

// StopRule is when a run ends: after a number of iterations, when the
// held-out loss stops improving (patience), or when the test accuracy
// reaches a target — whichever comes first. It is one rule for every
// driver: cmd/hub stops a real run by it and the simulator a simulated
// one, so a rule tried in simulation is the rule that runs.
//
// Iterations is enforced by the core (Config.Iterations: set it from
// here); the other two need an evaluation the core does not make, so the
// driver evaluates the master network when Due says, reports each result
// to a Stopper, and calls Core.Stop (or Driver.RequestStop) with the
// reason Observe returns.
type StopRule struct {
	// Iterations is the trainer iteration at which the run ends; 0: no
	// limit.
	Iterations uint64
	// EvalEvery is the number of iterations between evaluations.
	EvalEvery int
	// Patience stops the run once the held-out loss has not improved (by
	// more than MinImprovement) for this many evaluations in a row; 0:
	// off.
	Patience int
	// Target stops the run at the first evaluation whose accuracy is at
	// least Target, in (0, 1]; 0: off.
	Target float64
}

// MinImprovement is how much lower a held-out loss must be than the best
// so far to count as an improvement for Patience: less is noise.
const MinImprovement = 1e-4

// Validate returns an error wrapping ErrConfig if the rule can never stop
// a run or has a field out of range.
func (r StopRule) Validate() error {
	switch {
	case r.Patience < 0:
		return fmt.Errorf("%w: patience %d, want 0 (off) or more", ErrConfig, r.Patience)
	case !(r.Target >= 0 && r.Target <= 1):
		return fmt.Errorf("%w: target accuracy %v, want 0 (off) to 1", ErrConfig, r.Target)
	case (r.Patience > 0 || r.Target > 0) && r.EvalEvery < 1:
		return fmt.Errorf("%w: evaluations every %d iterations, want at least 1 for patience or a target", ErrConfig, r.EvalEvery)
	case r.Iterations == 0 && r.Patience == 0 && r.Target == 0:
		return fmt.Errorf("%w: nothing stops the run: want iterations, patience or a target", ErrConfig)
	}
	return nil
}

// Stopper applies a StopRule's evaluation rules to the evaluations of one
// run. It is pure: the driver evaluates and reports.
type Stopper struct {
	rule    StopRule
	best    float64
	stale   int
	reached bool
}

// NewStopper returns a Stopper for rule, before any evaluation.
func NewStopper(rule StopRule) *Stopper {
	return &Stopper{rule: rule, best: math.Inf(1)}
}

// Rule returns the rule s applies.
func (s *Stopper) Rule() StopRule { return s.rule }

// Due reports whether an evaluation is due once the master trainer has
// reached iteration iter (after the step of iteration iter−1): every
// EvalEvery iterations.
func (s *Stopper) Due(iter uint64) bool {
	return s.rule.EvalEvery > 0 && iter > 0 && iter%uint64(s.rule.EvalEvery) == 0
}

// Observe records an evaluation's accuracy and held-out loss, and returns
// why the run should stop by the rule ("" to go on): the target reached
// (the first time only), or the patience run out.
func (s *Stopper) Observe(acc, loss float64) string {
	if loss < s.best-MinImprovement {
		s.best, s.stale = loss, 0
	} else {
		s.stale++
	}
	switch {
	case s.rule.Target > 0 && acc >= s.rule.Target && !s.reached:
		s.reached = true
		return fmt.Sprintf("reached %.1f%% test accuracy", 100*s.rule.Target)
	case s.rule.Patience > 0 && s.stale >= s.rule.Patience:
		return fmt.Sprintf("converged: held-out loss has not improved for %d evaluations", s.rule.Patience)
	}
	return ""
}

// Best is the lowest held-out loss observed (+Inf before any).
func (s *Stopper) Best() float64 { return s.best }

// Stale is the number of evaluations in a row since the best.
func (s *Stopper) Stale() int { return s.stale }

// Reached reports whether an evaluation has reached the target.
func (s *Stopper) Reached() bool { return s.reached }
