package cpu

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestStepNotFused builds the training step (gpu/internal/fmaprobe links
// every zoo model's and graph layer's step, the optimizers and the GEMM's
// pure-Go family) for arm64, where Go fuses x*y + z into one instruction
// unless the product is converted explicitly, and fails if any fused
// multiply-add is left in cotrain's step packages (gpu, solver, models). A
// fused operation rounds once where amd64 rounds twice: the step would leave
// other bits on an arm64 phone than on an amd64 hub (TestMobileNetStepBits
// compares them), and cooperative nodes must apply bit-identical steps. The
// GEMM's assembly kernels fuse on every family, by contract; they are
// assembly, not Go, and so are not in this scan.
func TestStepNotFused(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles for arm64")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	bin := filepath.Join(t.TempDir(), "fmaprobe")
	build := exec.Command(goBin, "build", "-o", bin, "github.com/cotrain/cotrain/gpu/internal/fmaprobe")
	build.Env = append(build.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("arm64 build: %v\n%s", err, out)
	}
	out, err := exec.Command(goBin, "tool", "objdump", "-s", `^github\.com/cotrain/cotrain/(gpu|solver|models)[./]`, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump: %v\n%s", err, out)
	}
	// Sanity: the scan must see the kernels it guards.
	for _, fn := range []string{"cpu.(*CPU).SGDStep", "cpu.(*CPU).AdamStep", "cpu.bnTrain", "sgemm.goKernel4x4", "solver.fill"} {
		if !strings.Contains(string(out), fn+"(SB)") {
			t.Fatalf("%s not found in the arm64 binary", fn)
		}
	}
	fused := regexp.MustCompile(`\b(FMADD|FMSUB|FNMADD|FNMSUB)[SD]\b`)
	where := map[string]bool{}
	fn := ""
	for _, line := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(line, "TEXT "); ok {
			fn, _, _ = strings.Cut(f, " ")
			continue
		}
		if fused.MatchString(line) {
			pos, _, _ := strings.Cut(strings.TrimSpace(line), "\t")
			where[fn+" "+pos] = true
		}
	}
	if len(where) > 0 {
		s := make([]string, 0, len(where))
		for w := range where {
			s = append(s, w)
		}
		sort.Strings(s)
		t.Errorf("%d fused multiply-adds on arm64 (wrap the products in float32(...) or float64(...)):\n%s", len(s), strings.Join(s, "\n"))
	}
}
