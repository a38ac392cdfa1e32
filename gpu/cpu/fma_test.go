package cpu

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOptimizerKernelsNotFused builds the optimizer kernels for arm64, where
// Go may fuse multiply-adds, and fails if any FMA instruction is in them:
// a fused update rounds differently from amd64's, and every cooperative
// node must apply bit-identical steps (see optim.go).
func TestOptimizerKernelsNotFused(t *testing.T) {
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
	fused := regexp.MustCompile(`\b(FMADD|FMSUB|FNMADD|FNMSUB)[SD]\b`)
	for _, fn := range []string{"SGDStep", "AdamStep"} {
		out, err := exec.Command(goBin, "tool", "objdump", "-s", `cpu\.\(\*CPU\)\.`+fn+`$`, bin).CombinedOutput()
		if err != nil {
			t.Fatalf("objdump: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "TEXT") {
			t.Fatalf("%s not found in the arm64 binary", fn)
		}
		if m := fused.FindAllString(string(out), -1); len(m) > 0 {
			t.Errorf("%s on arm64 has %d fused multiply-adds (%v): wrap the products in float32(...)", fn, len(m), m[0])
		}
	}
}
