package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Event is one thing that happened in a run, as every observer sees it: a
// JSON line of --json output, a Server-Sent Event of /api/events, an input
// of the Recorder behind /api/status and /metrics.
//
// It marshals to one flat JSON object: {"event": Kind, "time": Time,
// ...Data's fields}. Data is one of this package's payload types (*Progress,
// *Peer, *Eval, ...), which the Recorder understands, or any value that
// marshals to a JSON object (a map for the commands' own events, such as
// "done"), which it passes on untouched.
type Event struct {
	Kind string
	Time time.Time
	Data any
}

// MarshalJSON writes {"event": Kind, "time": RFC 3339 with nanoseconds in
// UTC, ...Data's fields}. A field of Data named "event" or "time" is an
// error: it would shadow the envelope's.
func (e Event) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"event":`)
	k, err := json.Marshal(e.Kind)
	if err != nil {
		return nil, err
	}
	buf.Write(k)
	buf.WriteString(`,"time":"`)
	buf.WriteString(e.Time.UTC().Format(time.RFC3339Nano))
	buf.WriteByte('"')
	if e.Data == nil {
		buf.WriteByte('}')
		return buf.Bytes(), nil
	}
	d, err := json.Marshal(e.Data)
	if err != nil {
		return nil, fmt.Errorf("watch: event %q: %w", e.Kind, err)
	}
	d = bytes.TrimSpace(d)
	if len(d) < 2 || d[0] != '{' {
		return nil, fmt.Errorf("watch: event %q: data %T is not a JSON object", e.Kind, e.Data)
	}
	if len(d) == 2 {
		buf.WriteByte('}')
		return buf.Bytes(), nil
	}
	// Only a foreign Data (a command's map) can carry the envelope's
	// names: this package's payloads have neither field, and skip the probe,
	// which took more than half of each event's encoding (a progress event
	// of three workers: 12.9-13.7 us and 46 allocations with it, 5.6-5.8 us
	// and 8 without; BenchmarkEventMarshal/payload before and after the
	// change, alternated twice).
	if _, own := e.Data.(payload); !own {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(d, &probe); err != nil {
			return nil, fmt.Errorf("watch: event %q: %w", e.Kind, err)
		}
		if _, ok := probe["event"]; ok {
			return nil, fmt.Errorf("watch: event %q: data has its own \"event\" field", e.Kind)
		}
		if _, ok := probe["time"]; ok {
			return nil, fmt.Errorf("watch: event %q: data has its own \"time\" field", e.Kind)
		}
	}
	buf.WriteByte(',')
	buf.Write(d[1:])
	return buf.Bytes(), nil
}

// payload is this package's payload types, whose JSON fields leave "event"
// and "time" to the envelope (TestPayloadsLeaveTheEnvelope checks).
type payload interface{ watchPayload() }

func (*Session) watchPayload()  {}
func (*Progress) watchPayload() {}
func (*Peer) watchPayload()     {}
func (*Eval) watchPayload()     {}

// WriteLine writes e to w as one JSON line (the --json output of cmd/hub and
// cmd/worker). An event that does not encode is written as an "error" event
// at its time, with the encoder's message, so that the line is not lost
// silently.
func WriteLine(w io.Writer, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(Event{Kind: "error", Time: e.Time, Data: map[string]string{"err": err.Error()}})
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// The event kinds this package's payloads carry. The hub's come from its
// core (hub.EventKind names) except Progress, which is hub.EventMerged with
// what the driver measured around it.
const (
	KindSession  = "session"        // *Session: who is serving what (first event of a run)
	KindProgress = "progress"       // *Progress: an iteration closed (hub) or was pushed (worker)
	KindJoined   = "joined"         // *Peer: a worker registered
	KindStarted  = "started"        // *Peer (Workers): the first iteration opened
	KindLeft     = "left"           // *Peer: a worker left or was forgotten
	KindLate     = "late"           // *Peer: a worker missed the barrier's deadline
	KindDropped  = "dropped"        // *Peer: a worker missed too many deadlines in a row
	KindResync   = "resync"         // *Peer: a worker was sent the full state
	KindRetry    = "retry"          // *Peer: the deadline passed with no push; the iteration reopens
	KindStalled  = "parked"         // *Peer: no worker is left; the run waits for one
	KindRefused  = "refused"        // *Peer: an input was refused
	KindEnded    = "ended"          // *Peer: the run ended (Text: why)
	KindParked   = "worker-parked"  // *Peer: a worker gets no batch (Text: the figures)
	KindResumed  = "worker-resumed" // *Peer: a parked worker gets a batch again
	KindProbed   = "worker-probed"  // *Peer: a parked worker gets one batch to be measured
	KindEval     = "eval"           // *Eval: an evaluation on held-out data
	// KindCheckpoint is published by the binaries that checkpoint (the
	// hub): the recorder's log keeps only the latest.
	KindCheckpoint = "checkpoint"
	KindBattery    = "battery" // *Peer (Battery): a worker reported a battery other than before
)

// Session describes the run being watched. Fields that do not apply are
// empty (a worker knows no policy until welcomed).
type Session struct {
	Role       string   `json:"role"` // "hub", "worker" or "sim"
	Name       string   `json:"session,omitempty"`
	Model      string   `json:"model,omitempty"`
	Policy     string   `json:"policy,omitempty"`
	Codec      string   `json:"codec,omitempty"`
	PeerID     string   `json:"peer_id,omitempty"`
	Addrs      []string `json:"addrs,omitempty"`
	Hub        string   `json:"hub,omitempty"`         // a worker's hub address
	WorkerName string   `json:"worker_name,omitempty"` // a worker's --name
	Backend    string   `json:"backend,omitempty"`     // a worker's compute backend
	Batch      int      `json:"batch,omitempty"`       // the global batch
	Iterations uint64   `json:"iterations,omitempty"`  // planned (0: until a stopping rule fires)
	MinWorkers int      `json:"min_workers,omitempty"`
	Iteration  uint64   `json:"iteration"` // where the run starts (a resumed one later than 0)
	// Classes names the model's classes (the hub's data defines them);
	// Params and Trainable count its parameters and those that learn.
	Classes   []string `json:"classes,omitempty"`
	Params    int      `json:"params,omitempty"`
	Trainable int      `json:"trainable,omitempty"`
	// Vocab is a language model's vocabulary size (0 for other models):
	// its evaluations score next words, and the dashboard shows their
	// perplexity, e to the held-out loss, where it shows accuracy.
	Vocab int `json:"vocab,omitempty"`
}

// Progress is one closed iteration: what the hub merged, and what each
// worker in the barrier spent on it. On a worker it is one pushed iteration
// with the worker as its only entry.
type Progress struct {
	// Iteration is the number of iterations done: 1 after the first.
	Iteration     uint64  `json:"iteration"`
	Loss          float64 `json:"loss"`
	LR            float64 `json:"lr"`
	Samples       int     `json:"samples"`         // merged in this iteration
	SamplesPerSec float64 `json:"samples_per_sec"` // since the first iteration opened
	BytesUp       int64   `json:"bytes_up"`        // gradient payload of the pushes
	BytesDown     int64   `json:"bytes_down"`      // of the merged update, every copy
	// Seconds is the iteration's wall time: from the previous close (or
	// the start) to this one.
	Seconds float64 `json:"seconds"`
	// Pushes is, on a worker, the pushes it made so far (0 on the hub).
	Pushes  int    `json:"pushes,omitempty"`
	Workers []Tick `json:"workers"`
}

// Tick is one worker's part of an iteration. The hub sees the push arrive
// and reads its compute time; communication is the rest of the cycle from
// the iteration's open to the (last) push's arrival: the merged update's
// trip down, the push's trip up, and whatever the worker did besides
// computing. Wait is from that arrival to the barrier's close.
type Tick struct {
	ID        string  `json:"id"`
	Name      string  `json:"name,omitempty"`
	Batch     int     `json:"batch"`      // the batch it computed for this iteration
	Next      int     `json:"next_batch"` // its share of the next iteration (0: parked or late)
	ComputeMS float64 `json:"compute_ms"`
	CommMS    float64 `json:"comm_ms"`
	WaitMS    float64 `json:"wait_ms"`
	// PushMS is how long the transport took to receive its (last) push,
	// from the first byte to the last, when the transport can tell; it is
	// part of CommMS.
	PushMS    float64 `json:"push_ms"`
	BytesUp   int64   `json:"bytes_up"`
	BytesDown int64   `json:"bytes_down"`
}

// Peer is something that happened to one worker (or, with no ID, to the
// run: started, retry, parked, ended).
type Peer struct {
	Iteration uint64 `json:"iteration"`
	ID        string `json:"peer,omitempty"` // the full libp2p peer id
	Name      string `json:"name,omitempty"` // the worker's --name
	Backend   string `json:"backend,omitempty"`
	Workers   int    `json:"workers,omitempty"`
	Text      string `json:"text,omitempty"`
	// Battery is the worker's battery (KindBattery).
	Battery *Battery `json:"battery,omitempty"`
}

// Battery is a phone's battery as it reports it (wire.Battery).
type Battery struct {
	Percent float64 `json:"percent"`
	// Status is "discharging", "charging", "full", "not-charging" or
	// "unknown".
	Status string `json:"status"`
}

// Eval is an evaluation of the hub's weights after Iteration iterations.
// Accuracy is -1 when only the loss was measured.
type Eval struct {
	Iteration uint64  `json:"iteration"`
	Samples   int     `json:"samples"`
	Loss      float64 `json:"heldout_loss"`
	Accuracy  float64 `json:"test_accuracy"`
	// With --patience: the best loss so far, and evaluations since it
	// improved (nil otherwise).
	Best  *float64 `json:"best,omitempty"`
	Stale *int     `json:"stale,omitempty"`
}
