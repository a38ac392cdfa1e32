package watch

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
)

// page is the dashboard: one HTML file with its CSS and JavaScript inline,
// so that it needs nothing from the network but this server (a phone on a
// Wi-Fi without Internet access shows it all the same). Served, it reads
// /api/status and follows /api/events; written by WriteStatic, it draws the
// Status embedded in it and connects to nothing.
//
//go:embed page/index.html
var page []byte

// statusSlot is where WriteStatic puts the Status.
var statusSlot = []byte(`<script id="cotrain-status" type="application/json"></script>`)

func init() {
	if bytes.Count(page, statusSlot) != 1 {
		panic("watch: page/index.html must hold the status slot exactly once")
	}
}

// Page returns the dashboard page as a server hands it out: no Status in
// it, it reads /api/status and follows /api/events (watch/web). The caller
// must not modify it.
func Page() []byte { return page }

// WriteStatic writes the dashboard page with st in it: a file that shows
// the run as it ended, opened from disk with no server (the simulator's
// report). json.Marshal escapes <, > and &, so no string in st can end the
// script element early.
func WriteStatic(w io.Writer, st Status) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("watch: static page: %w", err)
	}
	i := bytes.Index(page, statusSlot)
	close := bytes.LastIndex(statusSlot, []byte("</script>"))
	var buf bytes.Buffer
	buf.Write(page[:i])
	buf.Write(statusSlot[:close])
	buf.Write(b)
	buf.Write(statusSlot[close:])
	buf.Write(page[i+len(statusSlot):])
	_, err = w.Write(buf.Bytes())
	return err
}
