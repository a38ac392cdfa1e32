package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cotrain/cotrain/internal/browsertest"
)

// dashboardRun starts a hub with --http on a free loopback port and two
// worker processes named phone-a and phone-b, slowed so that the run lasts
// long enough to be watched; phone-a serves its own dashboard too. It
// returns the hub's dashboard URL, phone-a's, and the hub.
func dashboardRun(t *testing.T, ctx context.Context, iterations int) (hubURL, workerURL string, h *proc) {
	t.Helper()
	hubBin, workerBin := buildBinaries(t)
	dir := t.TempDir()
	h = start(t, ctx, "hub", hubBin, "--model", "lenet5", "--data", "mnist", "--min-workers", "2", "--batch", "64",
		"--iterations", fmt.Sprint(iterations), "--eval-every", "10", "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false",
		"--json", "--http", "127.0.0.1:0", "--out", filepath.Join(dir, "hub"),
		// Checkpoints every 5 iterations: the page must not list each.
		"--checkpoint-every", "5")
	addrs := h.until(t, "listening", 30*time.Second)["addrs"].([]any)
	hubURL = h.until(t, "http", 10*time.Second)["url"].(string)
	for i, name := range []string{"phone-a", "phone-b"} {
		args := []string{"--hub", addrs[0].(string), "--data", "mnist", "--shard", fmt.Sprintf("%d/2", i),
			"--name", name, "--slowdown", "4", "--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(dir, name)}
		if i == 0 {
			args = append(args, "--http", "127.0.0.1:0")
		}
		w := start(t, ctx, name, workerBin, args...)
		if i == 0 {
			workerURL = w.until(t, "http", 30*time.Second)["url"].(string)
		}
		go func() { // keep its stdout flowing
			for range w.events {
			}
		}()
	}
	return hubURL, workerURL, h
}

// TestDashboardInChromium opens the hub's dashboard in headless Chromium
// while two worker processes train, and checks what a person sees: both
// workers by name, an iteration number that advances, a loss curve with
// points drawn on its canvas, a timeline; then the same page at a phone's
// width, with nothing wider than the screen. The screenshots are test
// artifacts (go test -artifacts).
func TestDashboardInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("a hub, two workers and a browser; skipped with -short")
	}
	browser := browsertest.Chromium(t, "the dashboard's browser test")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url, workerURL, h := dashboardRun(t, ctx, 2000)
	go func() { // keep the hub's stdout flowing
		for range h.events {
		}
	}()

	tab := browsertest.Tab(t, ctx, browser)

	// Both workers' rows, by the names they were started with.
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelectorAll("#workers tbody tr").length >= 2 && /^[1-9]/.test(document.querySelector("#iteration").textContent)`,
		chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("the dashboard never showed two workers and an iteration: %v", err)
	}
	names, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#workers tbody td.name")].map(td => td.firstChild.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "phone-a,phone-b" && strings.Join(names, ",") != "phone-b,phone-a" {
		t.Errorf("worker names %q, want phone-a and phone-b", names)
	}

	// The iteration advances while we watch, without reloading.
	iteration := func() int {
		s, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("#iteration").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.Fields(s)[0])
		if err != nil {
			t.Fatalf("iteration %q: %v", s, err)
		}
		return n
	}
	first := iteration()
	var second int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		if second = iteration(); second > first+2 {
			break
		}
	}
	if second <= first+2 {
		t.Errorf("iteration went from %d to %d in 30 s", first, second)
	}

	// A loss curve with points: the count the page drew, and pixels of the
	// curve's colour on the canvas (a blank canvas has none).
	type seen struct {
		Points, Colored, Timeline int
		State                     string
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelector("#accchart").dataset.points > 0`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("no evaluation drawn: %v", err)
	}
	drawn, err := chromedp.Run(tab, chromedp.Evaluate[seen](`(() => {
			const cv = document.querySelector("#losschart");
			const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
			let colored = 0;
			for (let i = 0; i < d.length; i += 4) if (d[i+3] > 0 && d[i] > 150 && d[i+1] < 120 && d[i+2] < 120) colored++;
			return {Points: +cv.dataset.points, Colored: colored,
				Timeline: +document.querySelector("#timeline").dataset.iterations,
				State: document.querySelector("#state").textContent};
		})()`))
	if err != nil {
		t.Fatal(err)
	}
	if drawn.Points < 3 || drawn.Colored < 50 || drawn.Timeline < 3 || drawn.State != "training" {
		t.Errorf("loss curve of %d points, %d pixels of its colour; timeline of %d iterations; state %q", drawn.Points, drawn.Colored, drawn.Timeline, drawn.State)
	}

	// The labels a newcomer misread: the header says what is served (not
	// "cotrain hub cotrain"), the workers' rate says it is their computing
	// speed (it does not add up to the session's), the timeline's title
	// names the iterations drawn, the checkpoints every 5 iterations show
	// as the latest one, and the loss axis does not go below 0.
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelector("#iteration").textContent.split(" ")[0] >= 20`,
		chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("the run never reached iteration 20: %v", err)
	}
	type labels struct {
		Role, Rate, TimelineTitle string
		Checkpoints               int
		LossYMin                  float64
	}
	lb, err := chromedp.Run(tab, chromedp.Evaluate[labels](`({Role: document.querySelector("#role").textContent,
		Rate: document.querySelectorAll("#workers thead th")[5].textContent,
		TimelineTitle: document.querySelector("#timelinetitle").textContent,
		Checkpoints: [...document.querySelectorAll("#log li")].filter((li) => li.textContent.includes("checkpoint at iteration")).length,
		LossYMin: +document.querySelector("#losschart").dataset.ymin})`))
	if err != nil {
		t.Fatal(err)
	}
	if lb.Role != "hub of session cotrain" || lb.Rate != "samples/s computing" || lb.Checkpoints != 1 || lb.LossYMin < 0 ||
		!regexp.MustCompile(`^Timeline: iterations \d+–\d+ of 2000, per worker$`).MatchString(lb.TimelineTitle) {
		t.Errorf("the dashboard shows %+v; want role \"hub of session cotrain\", \"samples/s computing\", one checkpoint in the events, "+
			"the loss axis from 0 or above and a timeline titled with its iterations", lb)
	}
	browsertest.CheckLayout(t, tab, "at 1280 px")
	// On a laptop the workers' table fits its box: every column shows
	// without scrolling sideways.
	wide, err := chromedp.Run(tab, chromedp.Evaluate[int](`(() => { const b = document.querySelector("#workers").parentElement; return b.scrollWidth - b.clientWidth; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if wide > 0 {
		t.Errorf("at 1280 px the workers' table is %d px wider than its box", wide)
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, "dashboard-desktop.png", png)

	// A phone's screen: 390 CSS pixels wide, nothing scrolls sideways but
	// the workers' table inside its own box.
	if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Sleep(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	overflow, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if png, err = chromedp.Run(tab, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	if overflow > 0 {
		t.Errorf("at 390 px the page is %d px wider than the screen", overflow)
	}
	browsertest.CheckLayout(t, tab, "at 390 px")
	browsertest.Screenshot(t, "dashboard-phone.png", png)

	// phone-a's own page, on the phone's screen: its name, its iteration
	// advancing, its loss curve.
	if err := chromedp.Do(tab, chromedp.Navigate(workerURL)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelector("#role").textContent === "worker phone-a" &&
		document.querySelector("#workers tbody td.name") !== null && document.querySelector("#losschart").dataset.points > 2`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("phone-a's page never showed its name and a loss curve: %v", err)
	}
	first = iteration()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		if second = iteration(); second > first+2 {
			break
		}
	}
	if second <= first+2 {
		t.Errorf("phone-a's page: iteration went from %d to %d in 30 s", first, second)
	}
	if png, err = chromedp.Run(tab, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, "worker-phone.png", png)
}

// TestDashboardEndpoints reads /api/status, /api/events and /metrics of a
// real hub while two worker processes train.
func TestDashboardEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("a hub and two workers; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, workerURL, h := dashboardRun(t, ctx, 2000)
	// The hub's --json lines: each join with the worker's full peer id,
	// its name and a time.
	lines := map[string]string{}
	for len(lines) < 2 {
		ev := h.until(t, "joined", time.Minute)
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev["time"])); err != nil || !strings.HasPrefix(fmt.Sprint(ev["peer"]), "12D3KooW") {
			t.Errorf("joined line %v", ev)
		}
		lines[fmt.Sprint(ev["name"])] = fmt.Sprint(ev["peer"])
	}
	go func() {
		for range h.events {
		}
	}()

	// The event stream, connected after the joins: progress every
	// iteration (the JSON lines have one per --log-every), each with both
	// workers by the ids they joined with.
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"api/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	joined := lines
	var its []float64
	for len(its) < 5 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v (joined %v, iterations %v)", err, joined, its)
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev["time"])); err != nil {
			t.Errorf("event without a time: %v", ev)
		}
		switch ev["event"] {
		case "progress":
			its = append(its, ev["iteration"].(float64))
			ws := ev["workers"].([]any)
			if len(ws) != 2 {
				t.Fatalf("progress with %d workers: %v", len(ws), ev)
			}
			for _, w := range ws {
				w := w.(map[string]any)
				if joined[fmt.Sprint(w["name"])] != w["id"] || w["compute_ms"].(float64) <= 0 {
					t.Errorf("progress entry %v; joined %v", w, joined)
				}
			}
		}
	}
	for i := 1; i < len(its); i++ {
		if its[i] != its[i-1]+1 {
			t.Errorf("progress events at iterations %v: one per iteration wanted", its)
			break
		}
	}

	var st struct {
		State     string
		Iteration float64
		Session   struct{ Model, Role string }
		Workers   []struct {
			ID, Name, State string
			Batch           int
		}
		LossCurve []struct{ Iteration, Value float64 } `json:"loss_curve"`
	}
	getJSON(t, url+"api/status", &st)
	if st.State != "training" || st.Session.Model != "lenet5" || st.Session.Role != "hub" || len(st.Workers) != 2 || len(st.LossCurve) < 5 {
		t.Fatalf("status %+v", st)
	}
	batch := 0
	if len(joined) != 2 || joined["phone-a"] == joined["phone-b"] {
		t.Errorf("joined lines %v", joined)
	}
	for _, w := range st.Workers {
		if joined[w.Name] != w.ID || !strings.HasPrefix(w.ID, "12D3KooW") || w.State != "training" {
			t.Errorf("worker %+v; joined events %v", w, joined)
		}
		batch += w.Batch
	}
	if batch != 64 {
		t.Errorf("the workers' batches add up to %d, want the global 64", batch)
	}

	// phone-a's own status: itself only, with its share of the global batch.
	var ws struct {
		Session struct {
			Role       string
			WorkerName string `json:"worker_name"`
			Batch      int
		}
		Iteration float64
		Workers   []struct {
			ID, Name string
			Batch    int
			Share    float64
		}
	}
	getJSON(t, workerURL+"api/status", &ws)
	if ws.Session.Role != "worker" || ws.Session.WorkerName != "phone-a" || ws.Session.Batch != 64 || len(ws.Workers) != 1 ||
		ws.Workers[0].ID != joined["phone-a"] || ws.Workers[0].Batch < 1 || ws.Workers[0].Share != float64(ws.Workers[0].Batch)/64 {
		t.Errorf("phone-a's status %+v", ws)
	}

	res, err = http.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	if it := fams["cotrain_iteration"].GetMetric()[0].GetGauge().GetValue(); it < its[len(its)-1] {
		t.Errorf("cotrain_iteration %v, the stream was at %v", it, its[len(its)-1])
	}
	names := map[string]bool{}
	for _, m := range fams["cotrain_worker_samples_per_second"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				names[l.GetValue()] = m.GetGauge().GetValue() > 0
			}
		}
	}
	if !names["phone-a"] || !names["phone-b"] {
		t.Errorf("cotrain_worker_samples_per_second by name: %v", names)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}
