//go:build opencl

package solver_test

import (
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// On OpenCL too, shared buffers give the bits of one buffer per tensor:
// the device's queue and its views of the shared buffers must keep a
// tensor's memory untouched for as long as the plan says it lives.
func TestSharedBuffersMatchUnsharedOnOpenCL(t *testing.T) {
	o := openCLDefault(t)
	build := map[string]func() (*solver.Net, error){
		"mobilenet-small": func() (*solver.Net, error) {
			return models.Build(o, "mobilenet-small", models.Config{Width: 0.25})
		},
		"residual": func() (*solver.Net, error) { return solver.NewNet(o, solver.Shape{C: 3, H: 8, W: 8}, residualNodes()) },
	}
	for _, model := range []string{"mobilenet-small", "residual"} {
		var runs [2][][]float32
		for s, share := range []bool{true, false} {
			n, err := build[model]()
			if err != nil {
				t.Fatal(err)
			}
			n.SetSharing(share)
			runs[s] = stepsFingerprint(t, n)
		}
		sameFingerprint(t, model, runs[0], runs[1], "shared", "unshared")
	}
}
