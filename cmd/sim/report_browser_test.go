package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cotrain/cotrain/internal/browsertest"
)

// reportScenario is tiny, run for 20 iterations: the report's timeline
// (the first 10) is then not the whole run, and its title must say so.
const reportScenario = `name tiny
model lenet5
data synthetic
batch 32
iterations 20
eval every=5 test=100
policies solo fixed adaptive
device nexus-6p name=fast
device meizu-mx3 name=slow
`

// TestReportPageInChromium opens the report's index.html from disk in
// headless Chromium (no server: file://) and checks what a person sees: the
// scenario, both phones, a loss curve with a point per iteration, the
// timeline under a title that names its iterations, every run in the table,
// the plots loaded; counts that add up (each phone's bytes up and down to
// the session's, those to the table's MB sent); no value cut, axes from 0
// with their labels inside the canvas. Screenshots at 1280 and 390 px wide
// are test artifacts (go test -artifacts), and docs/img's with browsertest.DocsImgEnv.
func TestReportPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulation and a browser; skipped with -short")
	}
	browser := browsertest.Chromium(t, "the report's browser test")
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.txt")
	if err := os.WriteFile(sc, []byte(reportScenario), 0o644); err != nil {
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
		Role, State, Iteration, TimelineTitle, UpLabel, SentHeader string
		Phones                                                     []string
		LossPoints, Timeline                                       int
		Runs, Images, Loaded                                       int
		LossYMin                                                   float64
		LossXLabels                                                string
		// From the status the page drew: the session's bytes, the phones'
		// sums, and the primary run's MB sent as the table shows it.
		Up, Down, PhonesUp, PhonesDown float64
		DownCells                      []string
		PrimarySent                    string
	}
	got, err := chromedp.Run(tab, chromedp.Poll[seen](`(() => {
		const imgs = [...document.querySelectorAll("#imgs img")];
		if (!imgs.length || !imgs.every((i) => i.complete)) return null;
		const st = JSON.parse(document.querySelector("#cotrain-status").textContent);
		const rows = [...document.querySelectorAll("#runs tbody tr")];
		const primary = rows.find((r) => r.cells[0].textContent === st.session.policy);
		return {Role: document.querySelector("#role").textContent, State: document.querySelector("#state").textContent,
			Iteration: document.querySelector("#iteration").textContent,
			TimelineTitle: document.querySelector("#timelinetitle").textContent,
			UpLabel: document.querySelector("#uplabel").textContent,
			SentHeader: document.querySelectorAll("#runs thead th")[6].textContent,
			Phones: [...document.querySelectorAll("#workers tbody td.name")].map((td) => td.firstChild.textContent),
			LossPoints: +document.querySelector("#losschart").dataset.points,
			LossYMin: +document.querySelector("#losschart").dataset.ymin,
			LossXLabels: document.querySelector("#losschart").dataset.xlabels,
			Timeline: +document.querySelector("#timeline").dataset.iterations,
			Runs: rows.length, Images: imgs.length, Loaded: imgs.filter((i) => i.naturalWidth > 0).length,
			Up: st.bytes_up, Down: st.bytes_down,
			PhonesUp: st.workers.reduce((a, w) => a + w.bytes_up, 0), PhonesDown: st.workers.reduce((a, w) => a + w.bytes_down, 0),
			DownCells: [...document.querySelectorAll("#workers tbody td[data-label=down]")].map((td) => td.textContent),
			PrimarySent: primary ? primary.cells[6].textContent : ""};
	})()`, chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("the report page never finished drawing: %v", err)
	}
	if got.Role != "simulation tiny" || got.State != "ended" || got.Iteration != "20 / 20" || len(got.Phones) != 2 ||
		got.Phones[0] != "fast" || got.Phones[1] != "slow" || got.LossPoints != 20 || got.Timeline != 10 || got.Runs != 4 ||
		got.Images != 4 || got.Loaded != 4 {
		t.Errorf("the report page shows %+v", got)
	}
	if got.TimelineTitle != "Timeline: iterations 1–10 of 20, per worker" {
		t.Errorf("timeline title %q: it must name the iterations it shows", got.TimelineTitle)
	}
	if got.UpLabel != "sent up (all frames)" || got.SentHeader != "MB sent (up + down)" {
		t.Errorf("labels %q and %q", got.UpLabel, got.SentHeader)
	}
	if got.Up <= 0 || got.Down <= 0 || got.PhonesUp != got.Up || got.PhonesDown != got.Down {
		t.Errorf("bytes: session up %v down %v, the phones' %v and %v: they must add up", got.Up, got.Down, got.PhonesUp, got.PhonesDown)
	}
	for _, c := range got.DownCells {
		if c == "0" || c == "" {
			t.Errorf("a phone's down column reads %q", c)
		}
	}
	if want := fmt.Sprintf("%.1f", (got.Up+got.Down)/1e6); got.PrimarySent != want {
		t.Errorf("the table's MB sent for the run shown is %q; sent up plus down is %s MB", got.PrimarySent, want)
	}
	if got.LossYMin < 0 {
		t.Errorf("the loss axis starts at %v, below 0", got.LossYMin)
	}
	browsertest.CheckLayout(t, tab, "at 1280 px")
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, "report-desktop.png", png)

	if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Sleep(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckLayout(t, tab, "at 390 px")
	if png, err = chromedp.Run(tab, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, "report-phone.png", png)
}
