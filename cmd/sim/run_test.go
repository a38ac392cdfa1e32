package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if b, _ := done(""); a != b {
		t.Errorf("same seed, different done lines:\n%s\n%s", a, b)
	}
	for _, f := range []string{"accuracy.png", "timeline-fixed.png", "timeline-adaptive.png"} {
		if _, err := os.Stat(filepath.Join(dir, "plots", f)); err != nil {
			t.Error(err)
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
