package cli

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Events writes one JSON object per line: {"event": kind, "time": when,
// ...fields}, the time in RFC 3339 with nanoseconds, UTC (the hub's and the
// worker's events, written by package watch, have the same two fields). It
// is safe for concurrent use. A nil *Events writes nothing.
type Events struct {
	// Now stamps the events; nil means time.Now.
	Now func() time.Time
	mu  sync.Mutex
	w   io.Writer
}

// NewEvents returns an event writer on w.
func NewEvents(w io.Writer) *Events { return &Events{w: w} }

// Emit writes one event. Field values must be JSON-encodable; "event" is set
// to kind and "time" to now whatever fields holds.
func (e *Events) Emit(kind string, fields map[string]any) error {
	if e == nil {
		return nil
	}
	obj := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		obj[k] = v
	}
	obj["event"] = kind
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	obj["time"] = now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.w.Write(append(b, '\n'))
	return err
}
