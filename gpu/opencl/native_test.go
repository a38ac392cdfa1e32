//go:build opencl

package opencl

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/jgillich/go-opencl/cl"
)

// TestOpenCLErrorMapping: the cl package's error values come back as the
// status codes they stand for, with their names.
func TestOpenCLErrorMapping(t *testing.T) {
	for _, c := range []struct {
		in   error
		code int
		name string
	}{
		{cl.ErrInvalidBinary, -42, "CL_INVALID_BINARY"},
		{cl.ErrOutOfResources, -5, "CL_OUT_OF_RESOURCES"},
		{cl.ErrDeviceNotFound, -1, "CL_DEVICE_NOT_FOUND"},
		{cl.ErrInvalidWorkGroupSize, -54, "CL_INVALID_WORK_GROUP_SIZE"},
		{cl.ErrInvalidDevicePartitionCount, -68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
		{cl.ErrOther(-1001), -1001, "CL_PLATFORM_NOT_FOUND_KHR"},
		{cl.ErrOther(-9999), -9999, "CL_ERROR"},
		{cl.ErrUnknown, 0, "CL_SUCCESS_WITHOUT_OBJECT"},
	} {
		err := clWrap("clOp", c.in)
		var ce *CLError
		if !errors.As(err, &ce) || ce.Code != c.code || ce.Name() != c.name || ce.Op != "clOp" {
			t.Errorf("clWrap(%v) = %#v, want code %d (%s)", c.in, err, c.code, c.name)
		}
	}
	if clWrap("x", nil) != nil {
		t.Error("clWrap(nil) is not nil")
	}
	other := errors.New("not a cl status")
	if err := clWrap("clOp", other); !errors.Is(err, other) || errors.As(err, new(*CLError)) {
		t.Errorf("clWrap of a foreign error = %v", err)
	}
	// Every value the binding can return has a distinct code with a name.
	seen := map[int]error{}
	for e, code := range clCodes {
		if prev, ok := seen[code]; ok {
			t.Errorf("%v and %v both map to %d", prev, e, code)
		}
		seen[code] = e
		if _, ok := clErrorNames[code]; !ok {
			t.Errorf("%v maps to %d, which has no name", e, code)
		}
	}
}

// TestOpenCLProgramBinary builds a small program from source, saves its
// binary, loads it back through clCreateProgramWithBinary (the program
// wrapped into a cl.Program by cl.ProgramFromHandle) and runs a kernel of it; a
// corrupted binary falls back to the source.
func TestOpenCLProgramBinary(t *testing.T) {
	o := openCLForTest(t)
	c := o.ctx
	const src = "__kernel void twice(__global float* x, float add) { size_t i = get_global_id(0); x[i] = 2 * x[i] + add; }"
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	run := func(p *clProgram) []float32 {
		t.Helper()
		k, err := c.kernel(p, "twice", "bf")
		if err != nil {
			t.Fatal(err)
		}
		defer k.release()
		m, err := c.alloc(4)
		if err != nil {
			t.Fatal(err)
		}
		in := []float32{1, 2, 3, 4}
		must(c.write(m, 0, ptr(in), 16))
		if err := c.launch(k, []int{4}, nil, m, float32(0.5)); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, 4)
		must(c.read(ptr(out), m, 0, 16))
		return out
	}
	want := fmt.Sprint([]float32{2.5, 4.5, 6.5, 8.5})
	for i, wantDisk := range []bool{false, true, true, false} {
		if i == 3 {
			bins, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
			if len(bins) != 1 {
				t.Fatalf("%d binaries cached, want 1", len(bins))
			}
			os.WriteFile(bins[0], []byte("not a binary"), 0o644)
		}
		p, fromDisk, err := c.buildCached(o.info, dir, src, "", log)
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if fromDisk != wantDisk {
			t.Errorf("build %d: from disk %v, want %v", i, fromDisk, wantDisk)
		}
		if got := fmt.Sprint(run(p)); got != want {
			t.Errorf("build %d (from disk %v): %s, want %s", i, fromDisk, got, want)
		}
		p.release()
	}
	// Refused binaries are typed errors, never crashes.
	for _, bin := range [][]byte{nil, []byte("garbage"), make([]byte, 4096)} {
		_, err := c.buildBinary(bin, "")
		var ce *CLError
		if !errors.As(err, &ce) {
			t.Errorf("buildBinary(%d bytes) = %v, want a *CLError", len(bin), err)
		}
	}
}

// TestOpenCLBuildFailure: a compiler error is a *BuildError carrying the log
// and CL_BUILD_PROGRAM_FAILURE.
func TestOpenCLBuildFailure(t *testing.T) {
	o := openCLForTest(t)
	_, err := o.ctx.buildSource("__kernel void broken(__global float* x) { x[0] = undeclared_name; }", "")
	var be *BuildError
	if !errors.As(err, &be) || !errors.Is(err, &CLError{Code: clBuildProgramFailure}) {
		t.Fatalf("err = %v, want a *BuildError wrapping CL_BUILD_PROGRAM_FAILURE", err)
	}
	if !strings.Contains(be.Log, "undeclared_name") {
		t.Errorf("build log does not name the culprit: %q", be.Log)
	}
}

// TestOpenCLDeviceInfo checks the device queries, the native ones against
// the cl package where it can answer.
func TestOpenCLDeviceInfo(t *testing.T) {
	o := openCLForTest(t)
	in := o.info
	if in.Name == "" || in.Platform == "" || in.Version == "" || in.ComputeUnits <= 0 || in.MaxWorkGroup <= 0 || in.GlobalMem <= 0 {
		t.Errorf("incomplete device info: %+v", in)
	}
	d := o.ctx.dev.d
	ext := deviceExtensions(d)
	if !strings.Contains(ext, "cl_khr_") {
		t.Errorf("extensions %q name no cl_khr_ extension", ext)
	}
	if theirs := orZero(d.Extensions); theirs != "" && strings.TrimSpace(theirs) != ext {
		t.Errorf("native extensions %q, cl package's %q", ext, theirs)
	}
	// CL_FP_ROUND_TO_NEAREST and CL_FP_INF_NAN are mandatory for float.
	if fp := deviceSingleFPConfig(d); fp&uint64(cl.FPConfigRoundToNearest) == 0 || fp&uint64(cl.FPConfigInfNaN) == 0 {
		t.Errorf("single FP config %#x lacks mandatory bits", fp)
	}
	t.Logf("%s; correctly rounded div/sqrt %v", in, in.CorrectDivSqrt)
}

func ptr(v []float32) unsafe.Pointer { return unsafe.Pointer(&v[0]) }
