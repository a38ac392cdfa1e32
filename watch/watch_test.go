package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestEventJSONIsFlatWithTime(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("x", 3600))
	b, err := json.Marshal(Event{Kind: KindJoined, Time: at, Data: &Peer{Iteration: 3, ID: "12D3KooWfull", Name: "pixel"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"joined","time":"2026-01-02T02:04:05.000006Z","iteration":3,"peer":"12D3KooWfull","name":"pixel"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if b, err := json.Marshal(Event{Kind: "x", Time: at}); err != nil || !strings.HasSuffix(string(b), `Z"}`) {
		t.Errorf("no data: %s %v", b, err)
	}
	if b, err := json.Marshal(Event{Kind: "x", Time: at, Data: map[string]any{}}); err != nil || !strings.HasSuffix(string(b), `Z"}`) {
		t.Errorf("empty data: %s %v", b, err)
	}
	for _, bad := range []any{map[string]any{"event": 1}, map[string]any{"time": 1}, 42, []int{1}} {
		if _, err := json.Marshal(Event{Kind: "x", Time: at, Data: bad}); err == nil {
			t.Errorf("data %v accepted", bad)
		}
	}
}

// TestBusNeverBlocks: a sink that never returns costs the publisher
// nothing; its events are counted as dropped once its queue is full, and
// the other sinks get every event in order. "Never blocks" is checked in a
// synctest bubble, not against the wall clock (which a loaded machine
// stretches at will): once every goroutine of the bubble waits, the
// publishing one must have finished, not be waiting on a sink.
func TestBusNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := &Bus{}
		release := make(chan struct{})
		bus.Attach(4, func(Event) { <-release })
		var got []uint64
		bus.Attach(1000, func(e Event) { got = append(got, e.Data.(*Peer).Iteration) })
		published := make(chan struct{})
		go func() {
			for i := range 500 {
				bus.Publish("x", &Peer{Iteration: uint64(i)})
			}
			close(published)
		}()
		synctest.Wait()
		select {
		case <-published:
		default:
			close(release) // let it finish
			<-published
			bus.Close()
			t.Fatal("Publish waits for a stalled sink")
		}
		// The stalled sink queues 4 and, once its goroutine has taken the
		// first, holds one more: the rest is dropped.
		if d := bus.Dropped(); d < 495 || d > 496 {
			t.Errorf("dropped %d, want 495 or 496", d)
		}
		close(release)
		bus.Close()
		if len(got) != 500 {
			t.Fatalf("the healthy sink got %d events", len(got))
		}
		for i, v := range got {
			if v != uint64(i) {
				t.Fatalf("event %d is %d: out of order", i, v)
			}
		}
		bus.Publish("after", nil) // closed: dropped quietly
		bus.Close()
		var nilBus *Bus
		nilBus.Publish("x", nil)
		nilBus.Close()
	})
}

// feed publishes a small run: two workers join, three iterations close, one
// worker is late, one is parked, one evaluation.
func feed(r *Recorder) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(s float64, kind string, d any) { r.Handle(Event{Kind: kind, Time: at(s), Data: d}) }
	ev(0, "listening", &Session{Role: "hub", Name: "lab", Model: "lenet5", Policy: "adaptive", Codec: "fp16", Batch: 64, Iterations: 100})
	ev(1, KindJoined, &Peer{ID: "peerA", Name: "pixel-7", Backend: "opencl"})
	ev(1.5, KindJoined, &Peer{ID: "peerB", Name: "galaxy", Backend: "cpu"})
	ev(1.5, KindStarted, &Peer{Workers: 2})
	for i := 1; i <= 3; i++ {
		ev(1.5+float64(i), KindProgress, &Progress{Iteration: uint64(i), Loss: 2.0 / float64(i), LR: 0.004, Samples: 64,
			SamplesPerSec: 64, BytesUp: 1000, BytesDown: 2000, Seconds: 1, Workers: []Tick{
				{ID: "peerA", Name: "pixel-7", Batch: 40, Next: 48, ComputeMS: 400, CommMS: 100, WaitMS: 500, BytesUp: 500, BytesDown: 1000},
				{ID: "peerB", Name: "galaxy", Batch: 24, Next: 16, ComputeMS: 800, CommMS: 150, WaitMS: 50, BytesUp: 500, BytesDown: 1000},
			}})
	}
	ev(5, KindLate, &Peer{Iteration: 3, ID: "peerB", Name: "galaxy"})
	ev(5.5, KindParked, &Peer{Iteration: 3, ID: "peerB", Name: "galaxy", Text: "its comm costs more than it adds"})
	ev(6, KindEval, &Eval{Iteration: 3, Samples: 2000, Loss: 0.5, Accuracy: 0.91})
}

func TestRecorderStatus(t *testing.T) {
	r := NewRecorder("hub", nil)
	feed(r)
	st := r.Status()
	if st.State != "training" || st.Iteration != 3 || st.Samples != 192 || st.Loss != 2.0/3 || st.TestAccuracy != 0.91 {
		t.Errorf("status %+v", st)
	}
	if st.Session.Model != "lenet5" || st.Session.Batch != 64 || st.Started != "2026-05-01T12:00:01.5Z" || st.Elapsed != 4.5 {
		t.Errorf("session %+v started %s elapsed %v", st.Session, st.Started, st.Elapsed)
	}
	if len(st.Workers) != 2 {
		t.Fatalf("workers %+v", st.Workers)
	}
	a, b := st.Workers[0], st.Workers[1]
	if a.Name != "pixel-7" || a.Backend != "opencl" || a.State != "training" || a.Batch != 48 || a.Share != 0.75 ||
		a.SamplesPerSec != 100 || a.Samples != 120 || a.BytesUp != 1500 || a.BytesDown != 3000 || a.Iterations != 3 {
		t.Errorf("worker A %+v", a)
	}
	if b.Name != "galaxy" || b.State != "parked" || b.Late != 1 || b.Why == "" || b.SamplesPerSec != 30 {
		t.Errorf("worker B %+v", b)
	}
	if len(st.LossCurve) != 3 || st.LossCurve[2] != (Point{3, 2.0 / 3}) || len(st.AccuracyCurve) != 1 || len(st.HeldOutCurve) != 1 {
		t.Errorf("curves %v %v %v", st.LossCurve, st.AccuracyCurve, st.HeldOutCurve)
	}
	if len(st.Timeline) != 3 || len(st.Log) != 7 { // listening, 2 joined, started, late, parked, eval
		t.Errorf("timeline %d, log %d", len(st.Timeline), len(st.Log))
	}
}

// TestRecorderBounded: a long run keeps at most MaxPoints points per curve
// (evenly thinned, the last iterations kept), TimelineLen iterations and
// LogLen events.
func TestRecorderBounded(t *testing.T) {
	r := NewRecorder("hub", nil)
	t0 := time.Now()
	for i := 1; i <= 10*MaxPoints; i++ {
		r.Handle(Event{Kind: KindProgress, Time: t0, Data: &Progress{Iteration: uint64(i), Loss: 1}})
		r.Handle(Event{Kind: KindLate, Time: t0, Data: &Peer{Iteration: uint64(i), ID: "p"}})
	}
	st := r.Status()
	if n := len(st.LossCurve); n > MaxPoints || n < MaxPoints/2 {
		t.Errorf("%d loss points", n)
	}
	last := st.LossCurve[len(st.LossCurve)-1].Iteration
	if last < 10*MaxPoints-16 {
		t.Errorf("last point at iteration %d of %d", last, 10*MaxPoints)
	}
	if len(st.Timeline) != TimelineLen || len(st.Log) != LogLen {
		t.Errorf("timeline %d, log %d", len(st.Timeline), len(st.Log))
	}
}

// TestSlowClientIsDropped: a client that reads nothing is disconnected
// once SubscriberQueue events wait for it, and the recorder never waits
// (checked in a synctest bubble, as in TestBusNeverBlocks).
func TestSlowClientIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRecorder("hub", nil)
		s := r.Subscribe()
		handled := make(chan struct{})
		go func() {
			for i := range SubscriberQueue + 10 {
				r.Handle(Event{Kind: KindProgress, Time: time.Now(), Data: &Progress{Iteration: uint64(i)}})
			}
			close(handled)
		}()
		synctest.Wait()
		select {
		case <-handled:
		default:
			for { // read, so that it finishes
				select {
				case <-s.C():
					continue
				case <-handled:
				}
				t.Fatal("Handle waits for a client that reads nothing")
			}
		}
		n := 0
		for range s.C() {
			n++
		}
		if n != SubscriberQueue || r.Status().Clients != 0 {
			t.Errorf("the slow client got %d events and is still counted: %d clients", n, r.Status().Clients)
		}
		var subs []*Subscriber
		for range MaxSubscribers {
			subs = append(subs, r.Subscribe())
		}
		if r.Subscribe() != nil {
			t.Errorf("more than %d streams accepted", MaxSubscribers)
		}
	})
}

func TestWriteStatic(t *testing.T) {
	r := NewRecorder("sim", nil)
	feed(r)
	st := r.Status()
	st.Workers[0].Name = "</script><b>x"
	var buf strings.Builder
	if err := WriteStatic(&buf, st); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	i := strings.Index(html, `<script id="cotrain-status" type="application/json">`)
	j := strings.Index(html[i:], "</script>")
	body := html[i+len(`<script id="cotrain-status" type="application/json">`) : i+j]
	var back Status
	if err := json.Unmarshal([]byte(body), &back); err != nil {
		t.Fatalf("embedded status: %v", err)
	}
	if back.Workers[0].Name != "</script><b>x" || back.Iteration != 3 {
		t.Errorf("round trip %+v", back.Workers[0])
	}
}

// TestStatusJSONIsSharedUntilAChange: pages polling /api/status share one
// encoding until an event changes the state.
func TestStatusJSONIsSharedUntilAChange(t *testing.T) {
	r := NewRecorder("hub", nil)
	feed(r)
	a, err := r.StatusJSON()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.StatusJSON()
	if &a[0] != &b[0] {
		t.Error("the same state was encoded twice")
	}
	r.Handle(Event{Kind: KindProgress, Time: time.Now(), Data: &Progress{Iteration: 4, Loss: 0.1}})
	c, _ := r.StatusJSON()
	var st Status
	if err := json.Unmarshal(c, &st); err != nil || st.Iteration != 4 {
		t.Errorf("after a change: iteration %d, %v", st.Iteration, err)
	}
}

// TestRecorderCountsItsOwnDrops: what a stalled other sink (a --json reader
// that stopped reading) loses is not counted as the dashboard's loss.
func TestRecorderCountsItsOwnDrops(t *testing.T) {
	bus := &Bus{}
	release := make(chan struct{})
	bus.Attach(1, func(Event) { <-release })
	r := NewRecorder("hub", bus)
	for i := range 100 {
		bus.Publish(KindLate, &Peer{Iteration: uint64(i), ID: "12D3KooWfull"})
	}
	close(release)
	bus.Close()
	if bus.Dropped() < 90 {
		t.Fatalf("the stalled sink dropped %d of 100", bus.Dropped())
	}
	if st := r.Status(); st.Dropped != 0 || len(st.Log) != LogLen {
		t.Errorf("dropped_events %d, log %d: want 0 and %d (the recorder got every event)", st.Dropped, len(st.Log), LogLen)
	}
}

// TestWriteLine: one line per event; one that does not encode becomes an
// "error" line naming why, at the event's time.
func TestWriteLine(t *testing.T) {
	at := time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	WriteLine(&buf, Event{Kind: KindLate, Time: at, Data: &Peer{Iteration: 3, ID: "p"}})
	WriteLine(&buf, Event{Kind: "bad", Time: at, Data: map[string]any{"event": 1}})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	var good, bad map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &good); err != nil || good["event"] != "late" || good["iteration"] != 3.0 {
		t.Errorf("line %s: %v", lines[0], err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &bad); err != nil || bad["event"] != "error" ||
		!strings.Contains(fmt.Sprint(bad["err"]), `"event" field`) || bad["time"] != "2026-11-25T22:00:00Z" {
		t.Errorf("line %s: %v", lines[1], err)
	}
}

// TestPayloadsLeaveTheEnvelope: no field of this package's payloads is
// named "event" or "time", which is why MarshalJSON does not probe them.
func TestPayloadsLeaveTheEnvelope(t *testing.T) {
	for _, p := range []payload{&Session{}, &Progress{}, &Peer{}, &Eval{}} {
		typ := reflect.TypeOf(p).Elem()
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" {
				name = typ.Field(i).Name
			}
			if name == "event" || name == "time" || typ.Field(i).Anonymous {
				t.Errorf("%s.%s encodes as %q: it would shadow the envelope", typ.Name(), typ.Field(i).Name, name)
			}
		}
	}
}

// BenchmarkEventMarshal encodes a progress event of three workers as its
// payload type and, for the reference, the same fields as a map, which
// MarshalJSON probes for "event" and "time".
func BenchmarkEventMarshal(b *testing.B) {
	pr := &Progress{Iteration: 7, Loss: 1.2, Samples: 192}
	for _, id := range []string{"12D3KooWaaaa", "12D3KooWbbbb", "12D3KooWcccc"} {
		pr.Workers = append(pr.Workers, Tick{ID: id, Name: id[8:], Batch: 64, Next: 64, ComputeMS: 61.6, CommMS: 5.1})
	}
	raw, _ := json.Marshal(pr)
	var asMap map[string]any
	json.Unmarshal(raw, &asMap)
	for _, c := range []struct {
		name string
		data any
	}{{"payload", pr}, {"map", asMap}} {
		b.Run(c.name, func(b *testing.B) {
			e := Event{Kind: KindProgress, Time: time.Now(), Data: c.data}
			for b.Loop() {
				if _, err := json.Marshal(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRecorderKeepsOneCheckpoint: checkpoints every few iterations do not
// flood the log; the latest is kept, and every other event stays.
func TestRecorderKeepsOneCheckpoint(t *testing.T) {
	r := NewRecorder("hub", nil)
	t0 := time.Now()
	r.Handle(Event{Kind: KindJoined, Time: t0, Data: &Peer{ID: "a"}})
	for i := 1; i <= 2*LogLen; i++ {
		r.Handle(Event{Kind: KindCheckpoint, Time: t0, Data: map[string]any{"iteration": i}})
	}
	r.Handle(Event{Kind: KindLate, Time: t0, Data: &Peer{ID: "a", Iteration: 7}})
	st := r.Status()
	var kinds []string
	for _, e := range st.Log {
		kinds = append(kinds, e.Kind)
	}
	if len(st.Log) != 3 || kinds[0] != KindJoined || kinds[1] != KindCheckpoint || kinds[2] != KindLate {
		t.Fatalf("log %v; want joined, the last checkpoint, late", kinds)
	}
	if it := st.Log[1].Data.(map[string]any)["iteration"]; it != 2*LogLen {
		t.Errorf("the checkpoint kept is at iteration %v, want the latest, %d", it, 2*LogLen)
	}
}
