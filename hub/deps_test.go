package hub

import (
	"os/exec"
	"strings"
	"testing"
)

// serving lists the import paths that serve or export over HTTP, each with
// the packages below it: net/http and Prometheus's.
var serving = []string{"net/http", "github.com/prometheus"}

// servingDeps returns the packages among pkg's dependencies (go list -deps)
// that serve over HTTP.
func servingDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var found []string
	for _, p := range strings.Fields(string(out)) {
		for _, s := range serving {
			root := strings.TrimSuffix(s, "/")
			if p == root || strings.HasPrefix(p, root+"/") {
				found = append(found, p)
				break
			}
		}
	}
	return found
}

// TestNoHTTPBelowTheBinaries keeps the protocol packages, the event bus and
// the simulator free of net/http and Prometheus: observers that serve (the
// dashboard, /metrics: watch/web) plug into a driver's watch.Bus from the
// binaries, so a library that only publishes events links none of it (the
// hub package linked 262 packages with them, 127 without).
func TestNoHTTPBelowTheBinaries(t *testing.T) {
	for _, pkg := range []string{".", "../worker", "../watch", "../sim"} {
		if found := servingDeps(t, pkg); len(found) > 0 {
			t.Errorf("%s links %s", pkg, strings.Join(found, " "))
		}
	}
	// The check itself: the dashboard's package serves, so it must be
	// found there.
	if found := servingDeps(t, "../watch/web"); len(found) < 2 {
		t.Errorf("../watch/web: found %v; the check is broken", found)
	}
}
