package hub

import (
	"errors"
	"strings"
	"testing"
)

// TestStopper: evaluations are due every EvalEvery iterations; the target
// stops a run once, the first time it is reached; patience counts the
// evaluations without an improvement of more than MinImprovement.
func TestStopper(t *testing.T) {
	s := NewStopper(StopRule{Iterations: 100, EvalEvery: 20, Patience: 2, Target: 0.9})
	for it, due := range map[uint64]bool{0: false, 19: false, 20: true, 40: true, 50: false, 100: true} {
		if s.Due(it) != due {
			t.Errorf("Due(%d) = %v, want %v", it, !due, due)
		}
	}
	steps := []struct {
		acc, loss float64
		want      string
	}{
		{0.5, 1.0, ""},
		{0.6, 0.99995, ""}, // not better by more than 1e-4: stale 1
		{0.91, 0.8, "reached 90.0% test accuracy"},
		{0.95, 0.7, ""}, // the target again: said once
		{0.95, 0.71, ""},
		{0.95, 0.70, "converged: held-out loss has not improved for 2 evaluations"},
	}
	for i, st := range steps {
		if got := s.Observe(st.acc, st.loss); got != st.want {
			t.Fatalf("evaluation %d (acc %v, loss %v): %q, want %q (best %v, stale %d)", i, st.acc, st.loss, got, st.want, s.Best(), s.Stale())
		}
	}
	if !s.Reached() || s.Best() != 0.7 || s.Stale() != 2 {
		t.Errorf("after the evaluations: reached %v, best %v, stale %d; want true, 0.7, 2", s.Reached(), s.Best(), s.Stale())
	}
	if NewStopper(StopRule{Iterations: 10}).Due(10) {
		t.Error("an evaluation is due with EvalEvery 0")
	}
}

// TestStopRuleValidate refuses a rule that never stops a run or has a field
// out of range, and names what is wrong.
func TestStopRuleValidate(t *testing.T) {
	if err := (StopRule{Iterations: 10}).Validate(); err != nil {
		t.Errorf("iterations alone: %v", err)
	}
	for _, c := range []struct {
		r    StopRule
		want string
	}{
		{StopRule{}, "nothing stops the run"},
		{StopRule{Patience: -1, Iterations: 1}, "patience -1"},
		{StopRule{Target: 1.5}, "target accuracy 1.5"},
		{StopRule{Patience: 3}, "evaluations every 0 iterations"},
	} {
		err := c.r.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrConfig saying %q", c.r, err, c.want)
		}
	}
}
