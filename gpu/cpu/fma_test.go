package cpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/internal/fmacheck"
)

// TestStepNotFused builds the training step (gpu/internal/fmaprobe links
// every zoo model's and graph layer's step, the optimizers and the GEMM's
// pure-Go family) for arm64 and fails if any fused multiply-add is left in
// cotrain's step packages (gpu, solver, models): the step would leave other
// bits on an arm64 phone than on an amd64 hub (TestMobileNetStepBits
// compares them), and cooperative nodes must apply bit-identical steps. The
// GEMM's assembly kernels fuse on every family, by contract; they are
// assembly, not Go, and so are not in this scan. cmd/cotrain's
// TestCommandsNotFused scans the whole of the commands.
func TestStepNotFused(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles for arm64")
	}
	fused, err := fmacheck.Find(t.TempDir(), "github.com/cotrain/cotrain/gpu/internal/fmaprobe",
		`^github\.com/cotrain/cotrain/(gpu|solver|models)[./]`,
		"github.com/cotrain/cotrain/gpu/cpu.(*CPU).SGDStep", "github.com/cotrain/cotrain/gpu/cpu.bnTrain",
		"github.com/cotrain/cotrain/gpu/cpu.(*CPU).winoSample", "github.com/cotrain/cotrain/gpu/internal/sgemm.goKernel4x4")
	if errors.Is(err, fmacheck.ErrNoGo) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(fused) > 0 {
		t.Errorf("%d fused multiply-adds on arm64 (wrap the products in float32(...) or float64(...)):\n%s", len(fused), strings.Join(fused, "\n"))
	}
}
