//go:build opencl

package solver_test

import (
	"fmt"
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// On OpenCL too, recomputing activations gives the bits of keeping them
// (gradients, weights, running statistics, logits), with the segments'
// replays in packed buffers and no kept column matrices or pool positions
// (a budget's Pass.NoKeep) on one side and both kept on the other.
func TestReplaySameBitsOnOpenCL(t *testing.T) {
	o := openCLDefault(t)
	build := map[string]func() *solver.Net{
		"mobilenet-small": func() *solver.Net {
			n, err := models.Build(o, "mobilenet-small", models.Config{Width: 0.25})
			if err != nil {
				t.Fatal(err)
			}
			return n
		},
		"residual":      func() *solver.Net { return buildBudgetModel(t, o, "residual") },
		"alexnet-small": func() *solver.Net { return buildBudgetModel(t, o, "alexnet-small") },
	}
	for _, model := range []string{"mobilenet-small", "residual", "alexnet-small"} {
		ref := stepsFingerprint(t, build[model]())
		probe := build[model]()
		variants := replayVariants(probe, len(probe.Layers()))
		for _, name := range []string{"every 2nd", "lower half"} {
			n := build[model]()
			n.SetReplayed(variants[name])
			sameFingerprint(t, fmt.Sprintf("%s, replayed %s", model, name), stepsFingerprint(t, n), ref, "replayed", "kept")
		}
		n := build[model]()
		least, _ := n.SetMemoryBudget(1, 6, 0)
		full := n.StepMemory(6, 0)
		if _, err := n.SetMemoryBudget((least.Total+full.Total)/2, 6, 0); err != nil {
			t.Fatal(err)
		}
		sameFingerprint(t, model+" under a budget", stepsFingerprint(t, n), ref, "budget", "none")
	}
}
