package gpu_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	_ "github.com/cotrain/cotrain/gpu/cpu"
)

// These tests run with and without -tags opencl; where the outcome depends on
// the build (or on the machine's devices) they branch on what is compiled in.

func TestOpenSpecs(t *testing.T) {
	withCL := slices.Contains(gpu.Drivers(), "opencl")
	for _, c := range []struct {
		spec    string
		wantErr error // nil: success expected
		cpu     bool  // the CPU backend expected
	}{
		{spec: "cpu", cpu: true},
		{spec: " CPU ", cpu: true},
		{spec: "gpu", wantErr: gpu.ErrDeviceSpec},
		{spec: "opencl:", wantErr: gpu.ErrDeviceSpec},
		{spec: "opencl:-1", wantErr: gpu.ErrDeviceSpec},
		{spec: "opencl:x", wantErr: gpu.ErrDeviceSpec},
		{spec: "opencl:9999", wantErr: map[bool]error{false: gpu.ErrNoOpenCL, true: nil}[withCL]},
	} {
		b, err := gpu.Open(c.spec, gpu.OpenOptions{})
		switch {
		case c.wantErr != nil && !errors.Is(err, c.wantErr):
			t.Errorf("gpu.Open(%q): error %v, want %v", c.spec, err, c.wantErr)
		case c.wantErr == nil && c.cpu && (err != nil || b.Name() != "cpu"):
			t.Errorf("gpu.Open(%q) = %v, %v; want the CPU backend", c.spec, b, err)
		case c.spec == "opencl:9999" && withCL && err == nil:
			t.Errorf("gpu.Open(%q) found a device", c.spec)
		}
	}
}

func TestOpenWithoutOpenCL(t *testing.T) {
	if slices.Contains(gpu.Drivers(), "opencl") {
		t.Skip("built with -tags opencl")
	}
	_, err := gpu.Open("opencl", gpu.OpenOptions{})
	if !errors.Is(err, gpu.ErrNoOpenCL) || !strings.Contains(err.Error(), "rebuild with -tags opencl") {
		t.Errorf("gpu.Open(opencl) error %v", err)
	}
	if _, err := gpu.Devices(); !errors.Is(err, gpu.ErrNoOpenCL) {
		t.Errorf("gpu.Devices() error %v", err)
	}
	var logs bytes.Buffer
	b, err := gpu.Open("auto", gpu.OpenOptions{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("gpu.Open(auto) = %v, %v", b, err)
	}
	if !strings.Contains(logs.String(), "built without OpenCL support") {
		t.Errorf("auto did not log why it chose the CPU: %q", logs.String())
	}
}

// TestOpenAuto: auto takes an OpenCL GPU when the machine has one, and
// otherwise the CPU backend with the reason logged.
func TestOpenAuto(t *testing.T) {
	var logs bytes.Buffer
	b, err := gpu.Open("auto", gpu.OpenOptions{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hasGPU := false
	if devs, err := gpu.Devices(); err == nil {
		for _, d := range devs {
			hasGPU = hasGPU || d.Type == "gpu" || d.Type == "accelerator"
		}
	}
	switch {
	case hasGPU && b.Name() == "cpu":
		t.Errorf("auto chose the CPU on a machine with an OpenCL GPU: %s", logs.String())
	case !hasGPU && b.Name() != "cpu":
		t.Errorf("auto chose %s on a machine without an OpenCL GPU", b.Name())
	case !hasGPU && !strings.Contains(logs.String(), "reason="):
		t.Errorf("auto did not log why it chose the CPU: %q", logs.String())
	}
	t.Logf("auto: %s; log: %s", b.Name(), strings.TrimSpace(logs.String()))
}

func TestDeviceInfoString(t *testing.T) {
	d := gpu.DeviceInfo{Index: 1, Name: "X", Type: "gpu", Platform: "P", ComputeUnits: 4, ClockMHz: 900, GlobalMem: 2 << 30, FP16: true}
	want := "opencl:1 X (gpu, P, 4 CU @ 900 MHz, 2048 MiB, fp16=true fp64=false)"
	if got := d.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// Open's HalfStorage: refused with an explicit "cpu" (it would be
// silently ignored), logged when auto falls back to the CPU, and never
// reported by the CPU backend.
func TestOpenHalfStorage(t *testing.T) {
	if _, err := gpu.Open("cpu", gpu.OpenOptions{HalfStorage: true}); !errors.Is(err, gpu.ErrDeviceSpec) || !strings.Contains(err.Error(), "fp16") {
		t.Errorf("gpu.Open(cpu, fp16) error %v, want gpu.ErrDeviceSpec naming fp16", err)
	}
	var logs bytes.Buffer
	b, err := gpu.Open("auto", gpu.OpenOptions{Log: slog.New(slog.NewTextHandler(&logs, nil)), HalfStorage: true})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := b.(interface{ Close() error }); ok {
		defer c.Close()
	}
	if b.Name() == "cpu" {
		if gpu.StoresHalf(b) || !strings.Contains(logs.String(), "fp16 storage needs OpenCL") {
			t.Errorf("auto with fp16 fell back to the CPU without saying it stores float32: %q", logs.String())
		}
	} else if !gpu.StoresHalf(b) {
		t.Errorf("auto with fp16 opened %s without half storage", b.Name())
	}
}

// fakeDriver records what Open handed it.
type fakeDriver struct{ got *gpu.OpenRequest }

func (f fakeDriver) Open(req gpu.OpenRequest) (gpu.Backend, error) {
	*f.got = req
	return nil, fmt.Errorf("%w: fake has none", gpu.ErrNoDevice)
}

func (fakeDriver) Devices() ([]gpu.DeviceInfo, error) { return nil, nil }

// A registered driver is opened by its name (with an index) and handed its
// own entry of OpenOptions.Config; a name registered twice panics.
func TestRegisterDriver(t *testing.T) {
	var got gpu.OpenRequest
	gpu.Register("fake-test", fakeDriver{&got})
	cfg := struct{ X int }{7}
	_, err := gpu.Open("fake-test:3", gpu.OpenOptions{HalfStorage: true, Config: map[string]any{"fake-test": cfg, "opencl": 1}})
	if !errors.Is(err, gpu.ErrNoDevice) {
		t.Fatalf("Open(fake-test:3): %v, want the driver's gpu.ErrNoDevice", err)
	}
	if got.Index != 3 || !got.HalfStorage || got.GPUOnly || got.Config != any(cfg) {
		t.Errorf("driver got %+v, want index 3, half storage, its own config", got)
	}
	if !slices.Contains(gpu.Drivers(), "fake-test") || !slices.Contains(gpu.Drivers(), "cpu") {
		t.Errorf("Drivers() = %v", gpu.Drivers())
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of one name did not panic")
		}
	}()
	gpu.Register("fake-test", fakeDriver{&got})
}
