package cli

import (
	"io"
	"log/slog"
	"strings"
)

// ListFlag is a repeatable string flag (flag.Var(&l, ...)).
type ListFlag []string

// String implements flag.Value.
func (l *ListFlag) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value: each use of the flag appends.
func (l *ListFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// NewLogger returns the text logger the binaries write to stderr: info and
// above, debug too when verbose.
func NewLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
