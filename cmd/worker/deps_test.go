package main

import (
	"os/exec"
	"strings"
	"testing"
)

// drawing lists the import path prefixes of plotting, fonts and PDF/SVG/EPS
// writing: gonum/plot and what it pulls in. Phones never draw.
var drawing = []string{
	"gonum.org/v1/plot",
	"codeberg.org/go-pdf/",
	"codeberg.org/go-fonts/",
	"codeberg.org/go-latex/",
	"github.com/ajstarks/svgo",
	"git.sr.ht/~sbinet/gg",
	"github.com/golang/freetype",
	"golang.org/x/image/font",
}

// drawingDeps returns the packages among pkg's dependencies (go list -deps)
// that draw.
func drawingDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var found []string
	for _, p := range strings.Fields(string(out)) {
		for _, d := range drawing {
			if strings.HasPrefix(p, d) {
				found = append(found, p)
			}
		}
	}
	return found
}

// TestPhoneBinariesDrawNothing keeps the worker and the hub, the binaries
// that run on phones, free of gonum/plot and its fonts and PDF writer
// (6 MB of a 39 MB android/arm64 worker when they were linked). Plots belong
// to cmd/cotrain and cmd/sim, through cmd/internal/chart.
func TestPhoneBinariesDrawNothing(t *testing.T) {
	for _, pkg := range []string{".", "../hub"} {
		if found := drawingDeps(t, pkg); len(found) > 0 {
			t.Errorf("%s links drawing code: %s", pkg, strings.Join(found, " "))
		}
	}
	// The check itself: the simulator draws, so it must find gonum/plot there.
	if found := drawingDeps(t, "../sim"); len(found) == 0 {
		t.Errorf("../sim: found no drawing package; the check is broken")
	}
}
