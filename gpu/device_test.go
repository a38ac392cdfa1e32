package gpu

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// These tests run with and without -tags opencl; where the outcome depends on
// the build (or on the machine's devices) they branch on what is compiled in.

func TestOpenSpecs(t *testing.T) {
	withCL := openCLDriver.open != nil
	for _, c := range []struct {
		spec    string
		wantErr error // nil: success expected
		cpu     bool  // the CPU backend expected
	}{
		{spec: "cpu", cpu: true},
		{spec: " CPU ", cpu: true},
		{spec: "gpu", wantErr: ErrDeviceSpec},
		{spec: "opencl:", wantErr: ErrDeviceSpec},
		{spec: "opencl:-1", wantErr: ErrDeviceSpec},
		{spec: "opencl:x", wantErr: ErrDeviceSpec},
		{spec: "opencl:9999", wantErr: map[bool]error{false: ErrNoOpenCL, true: nil}[withCL]},
	} {
		b, err := Open(c.spec, nil)
		switch {
		case c.wantErr != nil && !errors.Is(err, c.wantErr):
			t.Errorf("Open(%q): error %v, want %v", c.spec, err, c.wantErr)
		case c.wantErr == nil && c.cpu && (err != nil || b.Name() != "cpu"):
			t.Errorf("Open(%q) = %v, %v; want the CPU backend", c.spec, b, err)
		case c.spec == "opencl:9999" && withCL && err == nil:
			t.Errorf("Open(%q) found a device", c.spec)
		}
	}
}

func TestOpenWithoutOpenCL(t *testing.T) {
	if openCLDriver.open != nil {
		t.Skip("built with -tags opencl")
	}
	_, err := Open("opencl", nil)
	if !errors.Is(err, ErrNoOpenCL) || !strings.Contains(err.Error(), "rebuild with -tags opencl") {
		t.Errorf("Open(opencl) error %v", err)
	}
	if _, err := Devices(); !errors.Is(err, ErrNoOpenCL) {
		t.Errorf("Devices() error %v", err)
	}
	var logs bytes.Buffer
	b, err := Open("auto", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("Open(auto) = %v, %v", b, err)
	}
	if !strings.Contains(logs.String(), "built without OpenCL support") {
		t.Errorf("auto did not log why it chose the CPU: %q", logs.String())
	}
}

// TestOpenAuto: auto takes an OpenCL GPU when the machine has one, and
// otherwise the CPU backend with the reason logged.
func TestOpenAuto(t *testing.T) {
	var logs bytes.Buffer
	b, err := Open("auto", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	hasGPU := false
	if devs, err := Devices(); err == nil {
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
	d := DeviceInfo{Index: 1, Name: "X", Type: "gpu", Platform: "P", ComputeUnits: 4, ClockMHz: 900, GlobalMem: 2 << 30, FP16: true}
	want := "opencl:1 X (gpu, P, 4 CU @ 900 MHz, 2048 MiB, fp16=true fp64=false)"
	if got := d.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// OpenWith's HalfStorage: refused with an explicit "cpu" (it would be
// silently ignored), logged when auto falls back to the CPU, and never
// reported by the CPU backend.
func TestOpenHalfStorage(t *testing.T) {
	if _, err := OpenWith("cpu", OpenOptions{HalfStorage: true}); !errors.Is(err, ErrDeviceSpec) || !strings.Contains(err.Error(), "fp16") {
		t.Errorf("OpenWith(cpu, fp16) error %v, want ErrDeviceSpec naming fp16", err)
	}
	var logs bytes.Buffer
	b, err := OpenWith("auto", OpenOptions{Log: slog.New(slog.NewTextHandler(&logs, nil)), HalfStorage: true})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := b.(interface{ Close() error }); ok {
		defer c.Close()
	}
	if b.Name() == "cpu" {
		if StoresHalf(b) || !strings.Contains(logs.String(), "fp16 storage needs OpenCL") {
			t.Errorf("auto with fp16 fell back to the CPU without saying it stores float32: %q", logs.String())
		}
	} else if !StoresHalf(b) {
		t.Errorf("auto with fp16 opened %s without half storage", b.Name())
	}
}
