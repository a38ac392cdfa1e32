package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cotrain/cotrain/internal/browsertest"
)

// TestReportPageInChromium opens the report's index.html from disk in
// headless Chromium (no server: file://) and checks what a person sees: the
// scenario, both phones, a loss curve with a point per iteration, the
// timeline, every run in the table, the plots loaded. The screenshot is a
// test artifact (go test -artifacts).
func TestReportPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulation and a browser; skipped with -short")
	}
	browser := browsertest.Chromium(t, "the report's browser test")
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.txt")
	if err := os.WriteFile(sc, []byte(tiny), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), config{Scenario: sc, Out: out}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tab := browsertest.Tab(t, ctx, browser)
	if err := chromedp.Do(tab, chromedp.Navigate("file://"+filepath.Join(out, "index.html"))); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Role, State, Iteration string
		Phones                 []string
		LossPoints, Timeline   int
		Runs, Images, Loaded   int
	}
	got, err := chromedp.Run(tab, chromedp.Poll[seen](`(() => {
		const imgs = [...document.querySelectorAll("#imgs img")];
		if (!imgs.length || !imgs.every((i) => i.complete)) return null;
		return {Role: document.querySelector("#role").textContent, State: document.querySelector("#state").textContent,
			Iteration: document.querySelector("#iteration").textContent,
			Phones: [...document.querySelectorAll("#workers tbody td.name")].map((td) => td.firstChild.textContent),
			LossPoints: +document.querySelector("#losschart").dataset.points,
			Timeline: +document.querySelector("#timeline").dataset.iterations,
			Runs: document.querySelectorAll("#runs tbody tr").length,
			Images: imgs.length, Loaded: imgs.filter((i) => i.naturalWidth > 0).length};
	})()`, chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("the report page never finished drawing: %v", err)
	}
	if got.Role != "simulation tiny" || got.State != "ended" || got.Iteration != "10 / 10" || len(got.Phones) != 2 ||
		got.Phones[0] != "fast" || got.Phones[1] != "slow" || got.LossPoints != 10 || got.Timeline == 0 || got.Runs != 4 ||
		got.Images != 3 || got.Loaded != 3 {
		t.Errorf("the report page shows %+v", got)
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), "report.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
