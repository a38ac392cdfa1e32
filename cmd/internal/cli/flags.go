package cli

import (
	"fmt"
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

// FlagRule is one range check of a flag's value, for CheckFlags.
type FlagRule struct {
	Flag  string // as typed: "--batch"
	Value any    // what was given
	OK    bool   // the value is in range
	Want  string // the range, for a person: "at least 1"
}

// CheckFlags returns an error naming the first flag whose value is out of
// range, with the value given and the range wanted ("--batch 0: want at
// least 1"), or nil. The binaries wrap it in their usage error.
func CheckFlags(rules ...FlagRule) error {
	for _, r := range rules {
		if !r.OK {
			return fmt.Errorf("%s %v: want %s", r.Flag, r.Value, r.Want)
		}
	}
	return nil
}
