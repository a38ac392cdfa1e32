//go:build opencl

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileKernelsByLayer: `cotrain profile --kernel-profile layers` on
// the OpenCL backend (PoCL here) prints each kernel under the layer pass
// that launched it, for an imported graph, and reports the device's peak
// allocation.
func TestProfileKernelsByLayer(t *testing.T) {
	model := filepath.Join(fixtureDir, "mobile_blocks.onnx")
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"profile", "--device", "opencl", "--weights", model, "--train-last", "all",
		"--batch", "2", "--steps", "2", "--resident", "--kernel-profile", "layers", "--json"}, &out, &errb)
	if err != nil {
		t.Fatalf("profile: %v\n%s", err, errb.String())
	}
	log := errb.String()
	if !strings.Contains(log, "kernel profile over 5 steps") || !strings.Contains(log, " forward | ") || !strings.Contains(log, " backward | ") {
		t.Errorf("no per-layer kernel table on stderr:\n%s", log)
	}
	if !strings.Contains(out.String(), `"device_peak_mib"`) {
		t.Errorf("no device_peak_mib in %s", out.String())
	}
}
