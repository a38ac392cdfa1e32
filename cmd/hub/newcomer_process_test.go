package main

import (
	"context"
	"fmt"
	"os"
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
