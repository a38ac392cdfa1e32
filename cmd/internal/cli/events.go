package cli

import (
	"encoding/json"
	"io"
	"sync"
)

// Events writes one JSON object per line: {"event": kind, ...fields}. It is
// safe for concurrent use. A nil *Events writes nothing.
type Events struct {
	mu sync.Mutex
	w  io.Writer
}

// NewEvents returns an event writer on w.
func NewEvents(w io.Writer) *Events { return &Events{w: w} }

// Emit writes one event. Field values must be JSON-encodable; "event" is set
// to kind whatever fields holds.
func (e *Events) Emit(kind string, fields map[string]any) error {
	if e == nil {
		return nil
	}
	obj := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		obj[k] = v
	}
	obj["event"] = kind
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.w.Write(append(b, '\n'))
	return err
}
