package cli

import (
	"flag"
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

// SetUsage makes fs's --help (and a bad flag's message) print, on w, a usage
// line, a sentence on what the command does, and the flags:
//
//	Usage: cotrain eval --weights FILE --data mnist|DIR [flags]
//
//	Evaluates a model on a data set and prints its accuracy and loss.
//
//	Flags:
//	  ...
//
// Every binary and subcommand starts its help this way, so that a newcomer
// sees how to call it and what it is for before the list of flags.
func SetUsage(fs *flag.FlagSet, w io.Writer, synopsis, about string) {
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags:\n", synopsis, about)
		fs.PrintDefaults()
	}
}

// ParseArgs parses args into fs as fs.Parse does, except that flags may
// also follow positional arguments ("predict photo.jpg --json" sets --json
// rather than taking it for a file). Everything after a "--" is positional.
// Afterwards fs.Args() holds the positional arguments, in order.
func ParseArgs(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		// fs.Parse stops at the first non-flag or just after a "--": in the
		// second case everything left is positional.
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	// A last Parse of only the positional arguments, after a "--", leaves
	// them in fs.Args() and every flag as set above.
	return fs.Parse(append([]string{"--"}, pos...))
}
