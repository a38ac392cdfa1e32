package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/watch"
)

// tiny is a scenario small enough for a unit test: synthetic data, LeNet-5,
// a few iterations.
const tiny = `name tiny
model lenet5
data synthetic
batch 32
iterations 10
eval every=5 test=100
policies solo fixed adaptive
device nexus-6p name=fast
device meizu-mx3 name=slow
`

// TestRunJSON: --json ends with a done event holding the fields the issue
// names, the same seed gives the same done line, and plots are written.
func TestRunJSON(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.txt")
	if err := os.WriteFile(sc, []byte(tiny), 0o644); err != nil {
		t.Fatal(err)
	}
	done := func(out string) (string, map[string]any) {
		var stdout, stderr bytes.Buffer
		cfg := config{Scenario: sc, JSON: true, Out: out}
		if err := run(context.Background(), cfg, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		last := lines[len(lines)-1]
		var m map[string]any
		if err := json.Unmarshal([]byte(last), &m); err != nil || m["event"] != "done" {
			t.Fatalf("last line %q: %v", last, err)
		}
		return last, m
	}
	a, m := done(filepath.Join(dir, "plots"))
	for _, k := range []string{"test_accuracy", "sim_seconds_10_iterations", "fastest_solo_sim_seconds_10_iterations", "runs"} {
		if _, ok := m[k]; !ok {
			t.Errorf("done lacks %q: %s", k, a)
		}
	}
	// Every run says what its phones spent.
	for _, r := range m["runs"].([]any) {
		run := r.(map[string]any)
		if j, _ := run["joules"].(float64); !(j > 0) || run["joules_per_sample"] == nil || run["max_battery_percent"] == nil {
			t.Errorf("run %v: joules %v, per sample %v, battery %v", run["name"], run["joules"], run["joules_per_sample"], run["max_battery_percent"])
		}
	}
	// The same but for the time it was written.
	if b, _ := done(""); untimed(t, a) != untimed(t, b) {
		t.Errorf("same seed, different done lines:\n%s\n%s", a, b)
	}
	for _, f := range []string{"accuracy.png", "energy.png", "timeline-fixed.png", "timeline-adaptive.png"} {
		if _, err := os.Stat(filepath.Join(dir, "plots", f)); err != nil {
			t.Error(err)
		}
	}
	checkDashboard(t, filepath.Join(dir, "plots", "index.html"))
}

// untimed is a JSON line without its "time" field.
func untimed(t *testing.T, line string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["time"] == nil {
		t.Fatalf("line %q without a time: %v", line, err)
	}
	delete(m, "time")
	b, _ := json.Marshal(m)
	return string(b)
}

// checkDashboard reads the status embedded in the report's index.html: the
// primary run (adaptive) with both phones, its loss and accuracy curves and
// timeline, every run in the table, the plots beside it.
func checkDashboard(t *testing.T, path string) {
	t.Helper()
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const open = `<script id="cotrain-status" type="application/json">`
	i := bytes.Index(html, []byte(open))
	if i < 0 {
		t.Fatal("index.html has no status")
	}
	body := html[i+len(open):]
	body = body[:bytes.Index(body, []byte("</script>"))]
	var st watch.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("embedded status: %v", err)
	}
	if st.Session.Role != "sim" || st.Session.Name != "tiny" || st.Session.Policy != "adaptive" || st.State != "ended" || st.Iteration != 10 {
		t.Errorf("status %+v, session %+v", st, st.Session)
	}
	var names []string
	for _, w := range st.Workers {
		names = append(names, w.Name)
		if w.Samples == 0 || w.ComputeMS <= 0 || w.SamplesPerSec <= 0 {
			t.Errorf("phone %+v", w)
		}
	}
	if strings.Join(names, ",") != "fast,slow" {
		t.Errorf("phones %q", names)
	}
	if len(st.LossCurve) != 10 || len(st.AccuracyCurve) != 2 || len(st.HeldOutCurve) != 2 || len(st.Timeline) == 0 {
		t.Errorf("loss %d points, accuracy %d, held-out %d, timeline %d iterations", len(st.LossCurve), len(st.AccuracyCurve), len(st.HeldOutCurve), len(st.Timeline))
	}
	var runs []string
	for _, r := range st.Runs {
		runs = append(runs, r.Name)
	}
	if strings.Join(runs, ",") != "solo fast,solo slow,fixed,adaptive" {
		t.Errorf("runs %q", runs)
	}
	if !slices.Contains(st.Images, "accuracy.png") || !slices.Contains(st.Images, "timeline-adaptive.png") {
		t.Errorf("images %q", st.Images)
	}
	// The counts add up: each phone's frames up and down to the session's,
	// and those to what the runs table says the run shown sent.
	var up, down int64
	for _, w := range st.Workers {
		if w.BytesUp <= 0 || w.BytesDown <= 0 {
			t.Errorf("phone %s: %d bytes up, %d down", w.Name, w.BytesUp, w.BytesDown)
		}
		up, down = up+w.BytesUp, down+w.BytesDown
	}
	if up != st.BytesUp || down != st.BytesDown {
		t.Errorf("the phones sent %d and received %d bytes; the session says %d up and %d down", up, down, st.BytesUp, st.BytesDown)
	}
	for _, r := range st.Runs {
		if r.Name == st.Session.Policy && r.Bytes != st.BytesUp+st.BytesDown {
			t.Errorf("the runs table says %s sent %d bytes; up plus down is %d", r.Name, r.Bytes, st.BytesUp+st.BytesDown)
		}
	}
}

// TestRunTableAndErrors: the table names every run; a bad scenario is an
// error that lists the built-ins.
func TestRunTableAndErrors(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.txt")
	os.WriteFile(sc, []byte(tiny), 0o644)
	var stdout bytes.Buffer
	if err := run(context.Background(), config{Scenario: sc}, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"solo fast", "solo slow", "fixed", "adaptive", "where the time goes"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	err := run(context.Background(), config{Scenario: "nope"}, &stdout, &stdout)
	if err == nil || !strings.Contains(err.Error(), "paper-table1") {
		t.Errorf("unknown scenario: %v", err)
	}
	if err := run(context.Background(), config{Scenario: sc, Bandwidth: "fast"}, &stdout, &stdout); err == nil {
		t.Error("bad bandwidth accepted")
	}
	stdout.Reset()
	if err := run(context.Background(), config{Scenario: sc, Policies: "solo,adaptive"}, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if out := stdout.String(); !strings.Contains(out, "adaptive") || strings.Contains(out, "fixed") {
		t.Errorf("--policies solo,adaptive: want the adaptive run and no fixed one:\n%s", out)
	}
	if err := run(context.Background(), config{Scenario: sc, Policies: "solo,greedy"}, &stdout, &stdout); err == nil || !strings.Contains(err.Error(), "greedy") {
		t.Errorf("--policies with an unknown policy: %v", err)
	}
	stdout.Reset()
	if err := run(context.Background(), config{List: true}, &stdout, &stdout); err != nil || !strings.Contains(stdout.String(), "nexus-6p") {
		t.Errorf("list: %v\n%s", err, stdout.String())
	}
}
