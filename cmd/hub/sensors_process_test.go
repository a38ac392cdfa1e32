package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/data"
)

// accelFolder writes GenerateAccel's recordings, recs of 30 s per activity
// from seed, into a new folder.
func accelFolder(t *testing.T, recs int, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	if err := data.GenerateAccel(dir, data.AccelOptions{Recordings: recs, Seconds: 30, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHARHubAndTwoWorkerProcesses is issue 30's bar for activities: a hub
// and two workers, separate processes on loopback, each worker with its
// own folder of recordings (12 of 30 s per activity, seeds 21 and 22), train
// har-cnn for 300 iterations of global batch 64; the hub evaluates on
// recordings of a third seed that no worker saw. All three weight files are
// identical and the held-out accuracy is at least 0.9. The hub's data sets
// the channels, window, stride and normalisation, which the workers receive
// with the model.
func TestHARHubAndTwoWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for 300 iterations; skipped with -short")
	}
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	eval, d0, d1 := accelFolder(t, 4, 23), accelFolder(t, 12, 21), accelFolder(t, 12, 22)
	h := start(t, ctx, "hub", hubBin, "--model", "har-cnn", "--data", eval, "--min-workers", "2", "--batch", "64",
		"--iterations", "300", "--eval-every", "100", "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json", "--out", filepath.Join(dir, "hub"))
	addrs := h.until(t, "listening", 30*time.Second)["addrs"].([]any)
	var ws []*proc
	for i, d := range []string{d0, d1} {
		ws = append(ws, start(t, ctx, fmt.Sprintf("worker %d", i), workerBin, "--hub", addrs[0].(string), "--data", d,
			"--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(dir, fmt.Sprint("w", i))))
	}
	hubDone := h.until(t, "done", 3*time.Minute)
	sum := hubDone["weights_sha256"]
	for _, w := range ws {
		done := w.until(t, "done", time.Minute)
		if done["weights_sha256"] != sum || done["iterations"].(float64) != 300 {
			t.Errorf("%s: weights_sha256 %v after %v iterations; the hub's %v", w.name, done["weights_sha256"], done["iterations"], sum)
		}
		if err := <-w.done; err != nil {
			t.Errorf("%s exited: %v", w.name, err)
		}
	}
	if acc := hubDone["test_accuracy"].(float64); acc < 0.9 {
		t.Errorf("held-out accuracy %.4f after 300 iterations, want >= 0.9", acc)
	}
	t.Logf("hub: accuracy %.4f on %v held-out windows, %v samples/s, weights %v", hubDone["test_accuracy"], hubDone["test_samples"],
		hubDone["samples_per_sec"], sum)
}

// A worker that cuts its recordings otherwise than the hub is refused with
// both values named: --stride other than the hub's, --window other than
// the model's input.
func TestHARWorkerWindowMismatch(t *testing.T) {
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	recs := accelFolder(t, 1, 1)
	h := start(t, ctx, "hub", hubBin, "--model", "har-cnn", "--data", recs, "--min-workers", "1", "--batch", "16",
		"--iterations", "3", "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json", "--out", filepath.Join(dir, "hub"))
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	for _, tc := range []struct{ flag, want string }{
		{"--stride=32", "--stride 32, but the hub cuts its windows every 64 steps"},
		{"--window=64", "--window 64: the model takes windows of 128 steps"},
	} {
		w := start(t, ctx, "worker "+tc.flag, workerBin, "--hub", addr, "--data", recs, tc.flag, "--reconnect-timeout", "0",
			"--listen", "/ip4/127.0.0.1/tcp/0", "--out", filepath.Join(dir, "w"))
		select {
		case err := <-w.done:
			if err == nil || !strings.Contains(w.stderr.String(), tc.want) {
				t.Errorf("%s: exit %v, stderr %s; want it to say %q", tc.flag, err, tail(w.stderr.String(), 600), tc.want)
			}
			t.Logf("%s: %s", tc.flag, strings.TrimSpace(tail(w.stderr.String(), 300)))
		case <-time.After(90 * time.Second):
			t.Fatalf("%s: the worker did not stop", tc.flag)
		}
	}
}
