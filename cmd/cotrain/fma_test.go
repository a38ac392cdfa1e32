package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/internal/fmacheck"
)

// TestCommandsNotFused builds the three commands for arm64 and fails if
// any of cotrain's own functions in them has a fused multiply-add: besides
// the training step (gpu/cpu's TestStepNotFused), the data pipeline's
// resizing and normalisation, the hub's merges, the compressor's feedback,
// the worker's weight decay and the simulator's clocks and meters must
// round the same on an arm64 phone as on an amd64 machine, or the same
// images, session or seed give other bits.
func TestCommandsNotFused(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles for arm64")
	}
	for _, cmd := range []string{"cotrain", "hub", "worker"} {
		fused, err := fmacheck.Find(t.TempDir(), "github.com/cotrain/cotrain/cmd/"+cmd,
			`^github\.com/cotrain/cotrain/`, "github.com/cotrain/cotrain/solver.fill")
		if errors.Is(err, fmacheck.ErrNoGo) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(fused) > 0 {
			t.Errorf("cmd/%s: %d fused multiply-adds on arm64 (wrap the products in float32(...) or float64(...)):\n%s",
				cmd, len(fused), strings.Join(fused, "\n"))
		}
	}
}
