// Package cli holds what cotrain's binaries share: progress bars, JSON-line
// events, flag helpers. It is internal to cmd/.
package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// IsTerminal reports whether f is a character device (a terminal), where
// progress bars are drawn; elsewhere (a pipe, a file, CI) they are not.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Progress draws a one-line bar with rate and ETA, redrawn at most every
// 100 ms. A nil *Progress is valid and draws nothing, so callers need no
// branches for --json or non-terminal output.
type Progress struct {
	w         io.Writer
	label     string
	unit      string
	total     int
	done      int
	start     time.Time
	last      time.Time
	now       func() time.Time
	extra     string
	lastWidth int
}

// NewProgress returns a bar counting to total units (e.g. "img") on w.
func NewProgress(w io.Writer, label string, total int, unit string) *Progress {
	now := time.Now
	t := now()
	return &Progress{w: w, label: label, unit: unit, total: total, start: t, now: now}
}

// Add advances the bar by n units and sets the trailing note (e.g. the loss).
func (p *Progress) Add(n int, note string) {
	if p == nil {
		return
	}
	p.done += n
	p.extra = note
	if t := p.now(); t.Sub(p.last) >= 100*time.Millisecond || p.done >= p.total {
		p.last = t
		p.draw(t)
	}
}

// Done finishes the line.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.draw(p.now())
	fmt.Fprintln(p.w)
}

func (p *Progress) draw(t time.Time) {
	fmt.Fprint(p.w, "\r"+p.Line(t))
}

// Line renders the bar as of time t.
func (p *Progress) Line(t time.Time) string {
	const width = 30
	frac := 0.0
	if p.total > 0 {
		frac = min(float64(p.done)/float64(p.total), 1)
	}
	fill := int(frac * width)
	bar := strings.Repeat("=", fill)
	if fill < width {
		bar += ">" + strings.Repeat(" ", width-fill-1)
	}
	el := t.Sub(p.start).Seconds()
	rate, eta := 0.0, "--:--"
	if el > 0 {
		rate = float64(p.done) / el
	}
	if rate > 0 && p.total > p.done {
		eta = fmtDuration(time.Duration(float64(p.total-p.done) / rate * float64(time.Second)))
	} else if p.done >= p.total {
		eta = fmtDuration(t.Sub(p.start))
	}
	s := fmt.Sprintf("%s [%s] %3.0f%% %d/%d %.0f %s/s ETA %s %s", p.label, bar, 100*frac, p.done, p.total, rate, p.unit, eta, p.extra)
	// Pad over the remains of a longer previous line.
	if pad := p.lastWidth - len(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	p.lastWidth = len(s)
	return s
}

func fmtDuration(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}
