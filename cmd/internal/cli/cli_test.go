package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	start := time.Unix(1000, 0)
	p := &Progress{label: "train", unit: "img", total: 1000, start: start}
	p.done = 250
	line := p.Line(start.Add(5 * time.Second))
	for _, want := range []string{"train [", " 25% 250/1000", "50 img/s", "ETA 00:15"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	p.done = 1000
	if line := p.Line(start.Add(20 * time.Second)); !strings.Contains(line, "100%") || !strings.Contains(line, "ETA 00:20") {
		t.Errorf("finished line %q", line)
	}
}

func TestNilProgressAndEventsAreSilent(t *testing.T) {
	var p *Progress
	p.Add(1, "")
	p.Done()
	var e *Events
	if err := e.Emit("x", nil); err != nil {
		t.Fatal(err)
	}
}

func TestEventsOneObjectPerLine(t *testing.T) {
	var buf bytes.Buffer
	e := NewEvents(&buf)
	e.Emit("progress", map[string]any{"iteration": 3, "event": "ignored"})
	e.Emit("done", map[string]any{"test_accuracy": 0.99})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &last); err != nil {
		t.Fatal(err)
	}
	if last["event"] != "done" || last["test_accuracy"] != 0.99 {
		t.Errorf("last event %v", last)
	}
	var first map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	if first["event"] != "progress" {
		t.Errorf("event field overridden: %v", first)
	}
	for _, m := range []map[string]any{first, last} {
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"])); err != nil {
			t.Errorf("event without a time: %v", m)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	buf.Reset()
	e = &Events{w: &buf, Now: func() time.Time { return at }}
	e.Emit("x", map[string]any{"time": "ignored"})
	if got := strings.TrimSpace(buf.String()); got != `{"event":"x","time":"2026-01-02T02:04:05Z"}` {
		t.Errorf("stamped %s", got)
	}
}
