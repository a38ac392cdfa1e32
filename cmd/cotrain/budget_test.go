package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"
)

// profileJSON runs `cotrain profile args... --json` in a process of its
// own (the test binary as cotrain), so that its peak resident memory is
// the command's alone, and returns its JSON line.
func profileJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Through a shell that forks before it runs the command: Linux carries
	// the peak RSS (getrusage's maxrss) across execve, and Go starts a
	// child by vfork and exec, so a child of this test process would start
	// from the peak of every test before it.
	argv := append([]string{"-c", `"$0" "$@"; exit $?`, os.Args[0], "profile"}, args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", append(argv, "--json")...)
	cmd.Env = append(os.Environ(), asCLI+"=1")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if e, ok := err.(*exec.ExitError); ok {
			stderr = string(e.Stderr)
		}
		t.Fatalf("profile %v: %v\n%s", args, err, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("profile %v: %v in %q", args, err, out)
	}
	return res
}

// With --memory-budget on the CPU, the peak resident memory of training
// steps stays within the budget, which the same steps without it pass;
// the planner's estimate is reported beside the measurement.
func TestMemoryBudgetHoldsPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("trains mobilenet-v1 in two processes")
	}
	const budget = 120 // MiB
	model := []string{"--model", "mobilenet-v1", "--width", "0.5", "--input", "3x128x128", "--batch", "16", "--steps", "2"}
	free := profileJSON(t, model...)
	held := profileJSON(t, append(model, "--memory-budget", "120MiB")...)
	t.Logf("without a budget: peak RSS %.1f MiB; with %d MiB: peak RSS %.1f MiB, the planner's estimate %.1f MiB of a step limit of %.1f MiB, %v layers recomputed",
		free["peak_rss_mib"], budget, held["peak_rss_mib"], held["estimate_mib"], held["step_limit_mib"], held["replayed_layers"])
	if before := held["rss_before_model_mib"].(float64); before > 64 {
		t.Fatalf("the command's process held %.0f MiB before the model: a peak inherited from elsewhere", before)
	}
	if free["peak_rss_mib"].(float64) <= budget {
		t.Fatalf("without a budget the steps take %.1f MiB, within %d MiB: the test shows nothing", free["peak_rss_mib"], budget)
	}
	if got := held["peak_rss_mib"].(float64); got > budget {
		t.Errorf("peak RSS %.1f MiB over the %d MiB budget (estimate %.1f MiB)", got, budget, held["estimate_mib"])
	}
	if held["estimate_mib"].(float64) > held["step_limit_mib"].(float64) {
		t.Errorf("the planner's estimate %.1f MiB passes its limit %.1f MiB", held["estimate_mib"], held["step_limit_mib"])
	}
}
