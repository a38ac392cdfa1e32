package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTwoWorkersOnOneHost runs a hub and two worker processes on one host,
// neither given --name, and a third worker whose data has other classes:
//
//   - the two show as two devices (the host's name and their shard's
//     number), not both as the host's name;
//   - a worker's progress numbers an iteration as the hub's does (the
//     iterations done: both end at 20, not the worker at 19);
//   - the refused worker is logged by the hub at WARN.
func TestTwoWorkersOnOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three processes")
	}
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const iters = 20
	h := start(t, ctx, "hub", hubBin, "--model", "lenet5", "--data", "mnist", "--min-workers", "2", "--batch", "32",
		"--iterations", fmt.Sprint(iters), "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json", "--log-every", "1",
		"--out", filepath.Join(dir, "hub"))
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)

	// The stranger first: its classes are three colours, not ten digits.
	photos := filepath.Join(dir, "photos")
	writeImages(t, photos, []string{"apple", "grape", "lime"}, map[string][3]float64{"apple": {200, 40, 40}, "grape": {90, 40, 160}, "lime": {80, 200, 60}}, 2, 1)
	stranger := start(t, ctx, "stranger", workerBin, "--hub", addr, "--data", photos, "--listen", "/ip4/127.0.0.1/tcp/0",
		"--json", "--reconnect-timeout", "0", "--out", filepath.Join(dir, "stranger"))
	if err := <-stranger.done; err == nil {
		t.Error("the worker with other classes exited 0")
	}
	var ws []*proc
	for i := range 2 {
		ws = append(ws, start(t, ctx, fmt.Sprint("w", i), workerBin, "--hub", addr, "--data", "mnist", "--shard", fmt.Sprintf("%d/2", i),
			"--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--log-every", "1", "--out", filepath.Join(dir, fmt.Sprint("w", i))))
	}
	host, _ := os.Hostname()
	var names []string
	var hubIters []float64
	for len(hubIters) == 0 || hubIters[len(hubIters)-1] < iters {
		select {
		case ev, ok := <-h.events:
			if !ok {
				t.Fatal("the hub ended early")
			}
			switch ev["event"] {
			case "joined":
				names = append(names, fmt.Sprint(ev["name"]))
			case "progress":
				hubIters = append(hubIters, ev["iteration"].(float64))
			}
		case <-ctx.Done():
			t.Fatal("no 20 iterations in time")
		}
	}
	slices.Sort(names)
	if want := []string{host + "-0", host + "-1"}; !slices.Equal(names, want) {
		t.Errorf("joined as %q; want %q", names, want)
	}
	for _, w := range ws {
		var last float64
		for ev := range w.events {
			if ev["event"] == "progress" {
				it := ev["iteration"].(float64)
				if !slices.Contains(hubIters, it) {
					t.Errorf("%s: progress at iteration %v, which the hub never reported (hub: %v)", w.name, it, hubIters)
				}
				last = it
			}
		}
		if last != iters {
			t.Errorf("%s: last progress at iteration %v; the hub's last is %d", w.name, last, iters)
		}
	}
	<-h.done
	log := h.stderr.String()
	if !strings.Contains(log, `level=WARN msg="connection refused"`) || strings.Contains(log, `level=INFO msg="connection refused"`) {
		t.Errorf("the refused worker is not logged at WARN:\n%s", tail(log, 2000))
	}
}

// TestWorkerWhoseDataTheModelCannotTake: a worker with MNIST (28×28
// grayscale, digits "0" to "9") joins a hub training an RGB 32×32 model on
// a folder of the same ten classes. The classes match, so it registers;
// with the model known from the Welcome it checks the fit, and leaves at
// once, exit 2, saying in plain words what does not fit and what to do,
// instead of failing on a normalisation's channel count.
func TestWorkerWhoseDataTheModelCannotTake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes")
	}
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	digits := make([]string, 10)
	rgb := map[string][3]float64{}
	for i := range digits {
		digits[i] = fmt.Sprint(i)
		rgb[digits[i]] = [3]float64{float64(20 * i), 100, 200 - float64(20*i)}
	}
	writeImages(t, filepath.Join(dir, "digits"), digits, rgb, 1, 3)
	h := start(t, ctx, "hub", hubBin, "--model", "mobilenet-small", "--width", "0.25", "--data", filepath.Join(dir, "digits"),
		"--min-workers", "1", "--batch", "8", "--iterations", "5", "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json",
		"--out", filepath.Join(dir, "hub"))
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	w := exec.CommandContext(ctx, workerBin, "--hub", addr, "--data", "mnist", "--listen", "/ip4/127.0.0.1/tcp/0",
		"--reconnect-timeout", "0", "--out", filepath.Join(dir, "w"))
	out, err := w.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("worker: %v\n%s", err, out)
	}
	want := "worker: usage: the model takes 3-channel (RGB) 32×32 images, but --data mnist holds 28×28 grayscale digits (1 channel)"
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "means and") {
		t.Errorf("worker output:\n%s\nwant %q", out, want)
	}
	h.until(t, "left", 30*time.Second) // the hub sees it go
}
