package sim

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/solver"
)

// The activity scenario: three phones co-train har-cnn on simulated
// accelerometer windows, with the barrier's invariants checked at every
// iteration, adaptive shares and fp16 compression on batches of 3×128
// windows; the model is sized to the windows, and the held-out accuracy on
// recordings of a seed no phone holds rises well above chance (1/5).
func TestActivityScenario(t *testing.T) {
	sc, err := LoadScenario("activity")
	if err != nil {
		t.Fatal(err)
	}
	sc.Policies, sc.EvalEvery = []string{"adaptive"}, 50
	d, err := LoadData(sc, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Train.(*data.Signals); !ok || d.Config.Input != (solver.Shape{C: 3, H: 1, W: 128}) || d.Config.Classes != 5 || d.Test.Len() != 440 {
		t.Fatalf("model config %+v, %d test windows", d.Config, d.Test.Len())
	}
	rep, err := Run(context.Background(), sc, d, Options{Iterations: 150})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Run("adaptive")
	if r.Checks != r.Iterations || r.Iterations != 150 {
		t.Fatalf("invariants checked at %d of %d iterations", r.Checks, r.Iterations)
	}
	acc := r.Curve[len(r.Curve)-1].Accuracy
	t.Logf("held-out accuracy %.4f after 150 iterations", acc)
	if !(acc >= 0.6) {
		t.Errorf("held-out accuracy %.4f after 150 iterations, want at least 0.6 (chance is 0.2)", acc)
	}
}

// data accel takes no train= (its recordings are fixed, not cut to a count).
func TestActivityScenarioRefusesTrainCount(t *testing.T) {
	sc, err := ParseScenario(strings.NewReader("name t\nmodel har-cnn\ndata accel train=100\ndevice nexus-6p\n"))
	if err == nil {
		err = sc.Validate()
	}
	if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), "data accel with train=100") {
		t.Errorf("data accel train=100: %v", err)
	}
}
