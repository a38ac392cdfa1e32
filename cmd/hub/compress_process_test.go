package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestCompressedProcesses: a hub and two worker processes on loopback with
// top-k compression and layer-wise overlap (the workers learn both from
// their Welcome; they have no flag for it): after 40 iterations every
// node's final weights hash is the hub's, though every push and every
// merged update crossed the wire as 1% of the values in half precision
// (4% falling to 1% over the warm-up, at least 256 values a layer). SGD
// with momentum: the workers run the momentum (momentum correction), the
// nodes step with plain SGD.
func TestCompressedProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes; skipped with -short")
	}
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	h := start(t, ctx, "hub", hubBin, "--model", "lenet5", "--data", "mnist", "--min-workers", "2", "--batch", "64",
		"--iterations", "40", "--compress", "topk:0.01", "--overlap",
		"--optimizer", "sgd", "--lr", "0.05", "--listen", "/ip4/127.0.0.1/tcp/0",
		"--mdns=false", "--json", "--out", filepath.Join(dir, "hub"))
	addrs := h.until(t, "listening", 30*time.Second)["addrs"].([]any)
	var ws []*proc
	for i := range 2 {
		ws = append(ws, start(t, ctx, fmt.Sprintf("worker %d", i), workerBin, "--hub", addrs[0].(string), "--data", "mnist",
			"--shard", fmt.Sprintf("%d/2", i), "--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(dir, fmt.Sprint("w", i))))
	}
	hubDone := h.until(t, "done", time.Minute)
	sum := hubDone["weights_sha256"]
	for _, w := range ws {
		done := w.until(t, "done", time.Minute)
		if done["weights_sha256"] != sum {
			t.Errorf("%s: weights_sha256 %v, hub's %v", w.name, done["weights_sha256"], sum)
		}
		if done["iterations"].(float64) != 40 {
			t.Errorf("%s: %v iterations", w.name, done["iterations"])
		}
		if err := <-w.done; err != nil {
			t.Errorf("%s exited: %v", w.name, err)
		}
	}
	// lenet5's raw gradient is 61,706 floats, 246,824 bytes a push; its
	// small layers' 256-value floor (hub.TopKMinValues) and the 20
	// iterations of warm-up make top-k send about 1.7% of it on average.
	up, down := hubDone["bytes_up_per_iteration"].(float64), hubDone["bytes_down_per_iteration"].(float64)
	if up <= 0 || up > 2*246824/40 || down <= 0 || down > 2*246824/25 {
		t.Errorf("%.0f bytes up and %.0f down per iteration, want top-k's (2 workers, raw 246824 each)", up, down)
	}
	if hubDone["compression"] != "topk:0.01" || hubDone["iterations"].(float64) != 40 {
		t.Errorf("hub done: %v", hubDone)
	}
	if err := <-h.done; err != nil {
		t.Errorf("hub exited: %v", err)
	}
	t.Logf("hub: %v", hubDone)
}
