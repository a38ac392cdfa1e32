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

// With --memory-budget on OpenCL, the device's peak allocation stays
// within the budget, which the same steps without it pass.
func TestMemoryBudgetHoldsDevicePeak(t *testing.T) {
	const budget = 40 // MiB
	model := []string{"--device", "opencl", "--model", "mobilenet-v1", "--width", "0.25", "--input", "3x96x96", "--batch", "16", "--steps", "2"}
	free := profileJSON(t, model...)
	held := profileJSON(t, append(model, "--memory-budget", "40MiB")...)
	t.Logf("without a budget: device peak %.1f MiB; with %d MiB: device peak %.1f MiB, the planner's estimate %.1f MiB, %v layers recomputed",
		free["device_peak_mib"], budget, held["device_peak_mib"], held["estimate_mib"], held["replayed_layers"])
	if free["device_peak_mib"].(float64) <= budget {
		t.Fatalf("without a budget the steps take %.1f MiB of the device, within %d MiB: the test shows nothing", free["device_peak_mib"], budget)
	}
	if got := held["device_peak_mib"].(float64); got > budget {
		t.Errorf("device peak %.1f MiB over the %d MiB budget (estimate %.1f MiB)", got, budget, held["estimate_mib"])
	}
}
