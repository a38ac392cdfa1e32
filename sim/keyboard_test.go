package sim

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/cotrain/cotrain/data"
)

// The keyboard scenario: three phones co-train lstm-lm on their own parts
// of the licence texts, with the barrier's invariants checked at every
// iteration (identical weights on every phone, the merged gradient the
// sample-weighted mean), adaptive shares and fp16 compression on sequence
// batches; the held-out loss falls well below the uniform model's log V.
func TestKeyboardScenario(t *testing.T) {
	sc, err := LoadScenario("keyboard")
	if err != nil {
		t.Fatal(err)
	}
	sc.Policies, sc.EvalEvery, sc.TestImages = []string{"adaptive"}, 10, 300
	d, err := LoadData(sc, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	train := d.Train.(*data.Text)
	if d.Config.Classes != train.Vocab().Len() || d.Config.Input.W != 20 || d.Test.Len() != 300 {
		t.Fatalf("model config %+v for %d words, %d test samples", d.Config, train.Vocab().Len(), d.Test.Len())
	}
	// Each phone's part shares no token with another's.
	a, _ := shard(d.Train, 0, 3)
	b, _ := shard(d.Train, 1, 3)
	if a.Len()+b.Len() >= 2*train.Len()/3+10 {
		t.Errorf("parts of %d and %d samples of %d", a.Len(), b.Len(), train.Len())
	}
	rep, err := Run(context.Background(), sc, d, Options{Iterations: 30})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Run("adaptive")
	if r.Checks != r.Iterations || r.Iterations != 30 {
		t.Fatalf("invariants checked at %d of %d iterations", r.Checks, r.Iterations)
	}
	uniform := math.Log(float64(d.Config.Classes))
	last := r.Curve[len(r.Curve)-1].Loss
	t.Logf("held-out loss %.3f (perplexity %.1f) after 30 iterations; uniform %.3f (%d words)", last, math.Exp(last), uniform, d.Config.Classes)
	if !(last < uniform-1.5) {
		t.Errorf("held-out loss %.3f after 30 iterations, want well below the uniform model's %.3f", last, uniform)
	}
}
