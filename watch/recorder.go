package watch

import (
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// Status is the whole state of a watched run: what /api/status returns and
// what the dashboard page draws. docs/dashboard.md documents each field.
type Status struct {
	Session Session `json:"session"`
	// State is "waiting" (for workers), "training", "parked" (no worker
	// left), or "ended".
	State string `json:"state"`
	// Iteration is the number of iterations done.
	Iteration     uint64   `json:"iteration"`
	Started       string   `json:"started,omitempty"` // RFC 3339: when the first iteration opened
	Elapsed       float64  `json:"elapsed_seconds"`   // since Started, at Updated
	Updated       string   `json:"updated"`           // RFC 3339: the last event's time
	Samples       int64    `json:"samples"`           // merged since the start
	SamplesPerSec float64  `json:"samples_per_sec"`
	Loss          float64  `json:"loss"`          // the last iteration's training loss
	LR            float64  `json:"lr"`            // the last iteration's learning rate
	TestAccuracy  float64  `json:"test_accuracy"` // the last evaluation's, -1 before any
	BytesUp       int64    `json:"bytes_up"`      // gradient payload bytes since the start
	BytesDown     int64    `json:"bytes_down"`
	Workers       []Worker `json:"workers"`
	// LossCurve is the training loss by iteration, thinned to at most
	// MaxPoints points (every k-th iteration, k doubling as needed).
	LossCurve []Point `json:"loss_curve"`
	// AccuracyCurve and HeldOutCurve are the evaluations (also at most
	// MaxPoints, thinned the same way).
	AccuracyCurve []Point `json:"accuracy_curve"`
	HeldOutCurve  []Point `json:"heldout_curve"`
	// Timeline is the last TimelineLen iterations, oldest first.
	Timeline []Progress `json:"timeline"`
	// Log is the last LogLen events other than progress, oldest first.
	Log []Event `json:"log"`
	// Dropped counts events that did not reach the dashboard (its queue
	// was full); Clients is the number of /api/events streams open.
	Dropped int64 `json:"dropped_events"`
	Clients int   `json:"clients"`
	// Runs compares the runs of a simulation, and Images names the plots
	// beside its static page (both empty on a hub or worker).
	Runs   []Run    `json:"runs,omitempty"`
	Images []string `json:"images,omitempty"`
}

// Run is one run of a simulated scenario, for the comparison table.
type Run struct {
	Name          string  `json:"name"`
	Policy        string  `json:"policy"`
	Iterations    int     `json:"iterations"`
	Seconds       float64 `json:"seconds"`                // simulated, to the last merge
	TenIterations float64 `json:"ten_iterations_seconds"` // simulated, 0 if fewer
	ToTarget      float64 `json:"target_seconds"`         // simulated, -1 if never
	SamplesPerSec float64 `json:"samples_per_sec"`
	Bytes         int64   `json:"bytes"`
	TestAccuracy  float64 `json:"test_accuracy"` // final, -1 if never evaluated
	// Joules is what the run's phones spent (simulated energy model);
	// ToTargetJoules what they had spent at the target, -1 if never.
	Joules         float64 `json:"joules"`
	ToTargetJoules float64 `json:"target_joules"`
}

// Worker is one worker's row.
type Worker struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Backend string `json:"backend,omitempty"`
	// State is "waiting", "training", "late" (missed the last deadline),
	// "parked", or "left" (Why says why).
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// Batch is its share of the next iteration; Share is Batch over the
	// global batch.
	Batch int     `json:"batch"`
	Share float64 `json:"share"`
	// SamplesPerSec is its last batch over its last compute time.
	SamplesPerSec float64 `json:"samples_per_sec"`
	ComputeMS     float64 `json:"compute_ms"` // last iteration
	CommMS        float64 `json:"comm_ms"`    // last iteration (Tick says what it counts)
	WaitMS        float64 `json:"wait_ms"`    // last iteration
	PushMS        float64 `json:"push_ms"`    // last iteration (Tick says what it counts)
	Samples       int64   `json:"samples"`    // merged since it joined
	Iterations    int     `json:"iterations"` // it took part in
	BytesUp       int64   `json:"bytes_up"`
	BytesDown     int64   `json:"bytes_down"`
	Late          int     `json:"late"` // deadlines missed in all
	Joined        string  `json:"joined"`
	// Battery is the last battery it reported (nil: none).
	Battery *Battery `json:"battery,omitempty"`
	seq     int      // join order
}

// Point is one point of a curve.
type Point struct {
	Iteration uint64  `json:"iteration"`
	Value     float64 `json:"value"`
}

// Limits of what a Recorder keeps, so that a long run costs it a fixed
// amount of memory.
const (
	MaxPoints   = 1000 // points of each curve
	TimelineLen = 40   // iterations of the timeline
	LogLen      = 50   // events of the log
	MaxWorkers  = 512  // rows (the oldest that left go first)
)

// Recorder keeps a Status up to date from events and streams the events to
// subscribers (stream.go; the dashboard's /api/events clients). Handle is
// its Bus sink; Status and Subscribe are safe to call from other goroutines
// (HTTP handlers), which only ever contend with Handle, never with whoever
// publishes on the Bus.
type Recorder struct {
	mu      sync.Mutex
	st      Status
	rows    map[string]*Worker
	stride  [3]uint64 // thinning of the three curves
	subs    map[*Subscriber]struct{}
	seq     uint64 // events sent to subscribers
	joins   int    // rows made
	sink    *sink  // its queue on the bus, whose drops Status reports
	started time.Time
	// version counts changes of the state; cached is the JSON of the
	// state at version cachedAt, shared by every /api/status request until
	// the next change, so ten open pages cost one encoding per change.
	version, cachedAt uint64
	cached            []byte
}

// RecorderQueue is how many events may wait for a Recorder on its Bus.
const RecorderQueue = 1 << 12

// NewRecorder returns a recorder for a run of the given role ("hub",
// "worker" or "sim"). A bus, if not nil, gets it as a sink with a queue of
// RecorderQueue events, and Status.Dropped counts what that queue lost (not
// what the bus's other sinks, such as --json lines, lost). Without a bus,
// the caller hands it events through Handle.
func NewRecorder(role string, bus *Bus) *Recorder {
	r := &Recorder{rows: map[string]*Worker{}, subs: map[*Subscriber]struct{}{}, stride: [3]uint64{1, 1, 1}}
	r.st.Session.Role = role
	r.st.State = "waiting"
	r.st.TestAccuracy = -1
	if bus != nil {
		r.sink = bus.attach(RecorderQueue, r.Handle)
	}
	return r
}

// Status returns a copy of the current state.
func (r *Recorder) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.Workers = make([]Worker, 0, len(r.rows))
	for _, w := range r.rows {
		st.Workers = append(st.Workers, *w)
	}
	slices.SortFunc(st.Workers, func(a, b Worker) int { return a.seq - b.seq })
	st.LossCurve = slices.Clone(st.LossCurve)
	st.AccuracyCurve = slices.Clone(st.AccuracyCurve)
	st.HeldOutCurve = slices.Clone(st.HeldOutCurve)
	st.Timeline = slices.Clone(st.Timeline)
	st.Log = slices.Clone(st.Log)
	st.Clients = len(r.subs)
	if r.sink != nil {
		st.Dropped = r.sink.dropped.Load()
	}
	return st
}

// StatusJSON returns Status encoded as JSON: the same bytes to every
// caller until the state changes. The caller must not modify them.
func (r *Recorder) StatusJSON() ([]byte, error) {
	r.mu.Lock()
	if r.cached != nil && r.cachedAt == r.version {
		b := r.cached
		r.mu.Unlock()
		return b, nil
	}
	r.mu.Unlock()
	// Status copies under the lock; the encoding runs outside it, so the
	// sink is never held up by a request. What it encodes is cached only
	// if nothing changed meanwhile.
	r.mu.Lock()
	v := r.version
	r.mu.Unlock()
	b, err := json.Marshal(r.Status())
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.version == v {
		r.cached, r.cachedAt = b, v
	}
	r.mu.Unlock()
	return b, nil
}

// Handle applies e to the status and sends it to every subscriber. It is
// the Recorder's Bus sink.
func (r *Recorder) Handle(e Event) {
	line, err := json.Marshal(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.version++
	r.apply(e)
	if err != nil {
		return
	}
	r.seq++
	for s := range r.subs {
		select {
		case s.ch <- Message{ID: r.seq, Data: line}:
		default:
			// Too slow: it is dropped, not waited for.
			r.unsubscribe(s)
		}
	}
}

func (r *Recorder) apply(e Event) {
	r.st.Updated = e.Time.UTC().Format(time.RFC3339Nano)
	if !r.started.IsZero() {
		r.st.Elapsed = e.Time.Sub(r.started).Seconds()
	}
	switch d := e.Data.(type) {
	case *Session:
		r.st.Session = *d
		r.st.Iteration = d.Iteration
	case *Progress:
		r.progress(e, d)
		return
	case *Eval:
		if d.Accuracy >= 0 {
			r.st.TestAccuracy = d.Accuracy
			r.st.AccuracyCurve = r.addPoint(1, r.st.AccuracyCurve, Point{d.Iteration, d.Accuracy})
		}
		r.st.HeldOutCurve = r.addPoint(2, r.st.HeldOutCurve, Point{d.Iteration, d.Loss})
	case *Peer:
		r.peer(e, d)
	}
	if e.Kind == KindCheckpoint {
		// A checkpoint every few iterations would push every other event
		// out of the log: only the latest is kept.
		r.st.Log = slices.DeleteFunc(r.st.Log, func(x Event) bool { return x.Kind == KindCheckpoint })
	}
	r.st.Log = appendBounded(r.st.Log, e, LogLen)
}

func (r *Recorder) progress(e Event, d *Progress) {
	if r.started.IsZero() {
		// A worker's first push, or a hub that missed "started".
		r.start(e.Time.Add(-time.Duration(d.Seconds * float64(time.Second))))
	}
	r.st.State = "training"
	r.st.Iteration = d.Iteration
	r.st.Loss, r.st.LR = d.Loss, d.LR
	r.st.Samples += int64(d.Samples)
	r.st.SamplesPerSec = d.SamplesPerSec
	r.st.BytesUp += d.BytesUp
	r.st.BytesDown += d.BytesDown
	r.st.LossCurve = r.addPoint(0, r.st.LossCurve, Point{d.Iteration, d.Loss})
	r.st.Timeline = appendBounded(r.st.Timeline, *d, TimelineLen)
	for _, t := range d.Workers {
		w := r.row(t.ID, e.Time)
		if t.Name != "" {
			w.Name = t.Name
		}
		if w.State == "waiting" || w.State == "late" {
			w.State = "training"
		}
		if t.Batch > 0 {
			w.Iterations++
			w.Samples += int64(t.Batch)
			if t.ComputeMS > 0 {
				w.SamplesPerSec = float64(t.Batch) / (t.ComputeMS / 1e3)
			}
		}
		w.ComputeMS, w.CommMS, w.WaitMS, w.PushMS = t.ComputeMS, t.CommMS, t.WaitMS, t.PushMS
		w.BytesUp += t.BytesUp
		w.BytesDown += t.BytesDown
		w.Batch = t.Next
		if r.st.Session.Batch > 0 {
			w.Share = float64(t.Next) / float64(r.st.Session.Batch)
		}
	}
}

func (r *Recorder) peer(e Event, d *Peer) {
	r.st.Iteration = max(r.st.Iteration, d.Iteration)
	var w *Worker
	if d.ID != "" && e.Kind != KindRefused {
		w = r.row(d.ID, e.Time)
		if d.Name != "" {
			w.Name = d.Name
		}
		if d.Backend != "" {
			w.Backend = d.Backend
		}
	}
	switch e.Kind {
	case KindStarted:
		r.start(e.Time)
		r.st.State = "training"
	case KindStalled:
		r.st.State = "parked"
	case KindEnded:
		r.st.State = "ended"
	case KindJoined:
		w.State, w.Why = "waiting", ""
		if r.st.State != "waiting" {
			w.State = "training"
		}
	case KindLeft, KindDropped:
		w.State, w.Why, w.Batch, w.Share = "left", d.Text, 0, 0
	case KindLate:
		w.State = "late"
		w.Late++
	case KindParked:
		w.State, w.Why = "parked", d.Text
	case KindResumed:
		w.State, w.Why = "training", ""
	case KindBattery:
		if w != nil && d.Battery != nil {
			b := *d.Battery
			w.Battery = &b
		}
	}
}

func (r *Recorder) start(t time.Time) {
	if r.started.IsZero() {
		r.started = t
		r.st.Started = t.UTC().Format(time.RFC3339Nano)
	}
}

// row returns the row of id, made at t if new. When there are MaxWorkers
// rows the oldest that left is forgotten.
func (r *Recorder) row(id string, t time.Time) *Worker {
	if w := r.rows[id]; w != nil {
		return w
	}
	if len(r.rows) >= MaxWorkers {
		var oldest *Worker
		for _, w := range r.rows {
			if w.State == "left" && (oldest == nil || w.seq < oldest.seq) {
				oldest = w
			}
		}
		if oldest != nil {
			delete(r.rows, oldest.ID)
		}
	}
	r.joins++
	w := &Worker{ID: id, Name: id, State: "waiting", Joined: t.UTC().Format(time.RFC3339Nano), seq: r.joins}
	r.rows[id] = w
	return w
}

// addPoint appends p to curve c (0 loss, 1 accuracy, 2 held-out) unless
// thinning skips it; a curve at MaxPoints keeps every other point and
// doubles its stride.
func (r *Recorder) addPoint(c int, pts []Point, p Point) []Point {
	if p.Iteration%r.stride[c] != 0 && len(pts) > 0 {
		return pts
	}
	pts = append(pts, p)
	if len(pts) > MaxPoints {
		r.stride[c] *= 2
		kept := pts[:0]
		for _, q := range pts {
			if q.Iteration%r.stride[c] == 0 {
				kept = append(kept, q)
			}
		}
		pts = kept
	}
	return pts
}

func appendBounded[T any](s []T, v T, n int) []T {
	if len(s) >= n {
		s = append(s[:0:0], s[len(s)-n+1:]...)
	}
	return append(s, v)
}
