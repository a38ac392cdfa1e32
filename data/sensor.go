package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/internal/limits"
)

// Default windowing for accelerometers sampled at 50 Hz, UCI HAR's choice
// (Anguita et al., "A Public Domain Dataset for Human Activity Recognition
// Using Smartphones", ESANN 2013): windows of 2.56 s (128 samples) with 50%
// overlap. 2.56 s holds at least two gait cycles even at a slow walking
// cadence (a stride, two steps, takes about 1 s at the usual 100–120 steps a
// minute), so every window of a periodic activity shows its period; a power
// of two suits an FFT; and the overlap doubles the windows a recording gives
// without making any two windows identical.
const (
	DefaultWindow = 128
	DefaultStride = 64
)

// DefaultMaxSensorBytes is the largest recording file read when
// SensorOptions.MaxBytes is 0: 64 MiB, about a day of 3-axis samples at
// 50 Hz written as CSV. A file is refused from its size, before it is read.
const DefaultMaxSensorBytes = 64 << 20

// maxLineBytes caps one line of a recording: a CSV row of a few hundred
// channels, or a UCI HAR row of 128 values, is far shorter.
const maxLineBytes = 1 << 20

// SensorOptions says how recordings are cut into windows and normalised.
type SensorOptions struct {
	// Window is the length of a window in time steps; 0 means
	// DefaultWindow. Stride is the step between the starts of consecutive
	// windows; 0 means DefaultStride (Stride > Window skips steps).
	// LoadUCIHAR, whose rows are windows already, takes Window 0 or the
	// row length and ignores Stride.
	Window, Stride int
	// Mean and Std hold one value per channel, in the recordings' units.
	// Both empty means compute them on the recordings loaded (every row of
	// every recording, each counted once however many windows hold it):
	// do that for the training set, and give its values (Signals.Norm) for
	// the test set.
	Mean, Std []float32
	// MaxBytes caps the size of one file; 0 means DefaultMaxSensorBytes.
	MaxBytes int64
}

// resolve fills o's defaults and checks it.
func (o SensorOptions) resolve() (SensorOptions, error) {
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Stride == 0 {
		o.Stride = DefaultStride
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxSensorBytes
	}
	if _, err := limits.Extent("window", int64(o.Window), true); err != nil {
		return o, fmt.Errorf("data: sensor: %w", err)
	}
	if _, err := limits.Extent("stride", int64(o.Stride), true); err != nil {
		return o, fmt.Errorf("data: sensor: %w", err)
	}
	if o.MaxBytes < 0 {
		return o, errorf(ErrInvalid, "data: sensor: file limit %d bytes, want 0 (the default) or more", o.MaxBytes)
	}
	if (len(o.Mean) == 0) != (len(o.Std) == 0) {
		return o, errorf(ErrInvalid, "data: sensor: %d means and %d stds, want both or neither", len(o.Mean), len(o.Std))
	}
	return o, nil
}

// recording is one file's rows: rows × c values, row-major (time-major).
type recording struct {
	vals  []float32
	c     int
	label int32
}

func (r recording) rows() int { return len(r.vals) / r.c }

// openLimited opens path after checking its size against maxBytes.
func openLimited(path string, maxBytes int64) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("data: sensor: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, errorf(ErrInvalid, "data: sensor: %s is not a regular file", path)
	}
	if st.Size() > maxBytes {
		return nil, errorf(ErrTooLarge, "data: sensor: %s holds %d bytes, more than the %d-byte limit", path, st.Size(), maxBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: sensor: %w", err)
	}
	return f, nil
}

// parseValue parses one number of a recording, refusing NaN and infinities
// with the file, line and column.
func parseValue(field, path string, line, col int) (float32, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(field), 32)
	if errors.Is(err, strconv.ErrRange) && !math.IsInf(v, 0) {
		err = nil // a float32 underflow rounds to zero, as in C's strtof
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, errorf(ErrInvalid, "data: sensor: %s:%d: column %d: %s is beyond float32's range", path, line, col, strings.TrimSpace(field))
	}
	if err != nil {
		return 0, errorf(ErrFormat, "data: sensor: %s:%d: column %d: %q is not a number", path, line, col, field)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errorf(ErrInvalid, "data: sensor: %s:%d: column %d: %s is not finite", path, line, col, strings.TrimSpace(field))
	}
	return float32(v), nil
}

// readTable reads a numeric table from r (path names it in errors): one
// row a line, fields as split returns them, every row as wide as the first.
// With header set, a first line that is not all numbers names the columns.
// Empty lines are skipped.
func readTable(r io.Reader, path string, split func(string) []string, header bool) (names []string, vals []float32, cols int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		fields := split(text)
		if cols == 0 && names == nil && header && !allNumbers(fields) {
			names = make([]string, len(fields))
			for i, f := range fields {
				names[i] = strings.TrimSpace(f)
			}
			cols = len(fields)
			continue
		}
		if cols == 0 {
			cols = len(fields)
		}
		if len(fields) != cols {
			return nil, nil, 0, errorf(ErrFormat, "data: sensor: %s:%d: %d columns, want %d as in the first row", path, line, len(fields), cols)
		}
		for i, f := range fields {
			v, err := parseValue(f, path, line, i+1)
			if err != nil {
				return nil, nil, 0, err
			}
			vals = append(vals, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, 0, errorf(ErrFormat, "data: sensor: %s:%d: %v", path, line+1, err)
	}
	if len(vals) == 0 {
		return nil, nil, 0, errorf(ErrFormat, "data: sensor: %s: no rows of numbers", path)
	}
	return names, vals, cols, nil
}

// allNumbers reports whether every field parses as a number (NaN and Inf
// included: they are then refused as values, not taken for a header).
func allNumbers(fields []string) bool {
	for _, f := range fields {
		if _, err := strconv.ParseFloat(strings.TrimSpace(f), 32); err != nil && !errors.Is(err, strconv.ErrRange) {
			return false
		}
	}
	return true
}

func splitComma(s string) []string { return strings.Split(s, ",") }

// LoadSensorFolder loads dir laid out as one sub-folder per activity,
// holding CSV recordings:
//
//	dir/walking/2024-05-01.csv
//	dir/sitting/a/office.csv
//
// A recording has one row per time step and one column per channel
// (comma-separated numbers); an optional first row of names is a header.
// Every recording must have the same number of channels and, where headers
// are given, the same names. Each recording is cut into windows of
// opt.Window steps starting every opt.Stride steps (a recording shorter
// than a window gives none; a folder that gives none at all is an error);
// windows never span two recordings. Class i is the i-th sub-folder name in
// sorted order, as in LoadImageFolder, and the same files are refused
// (anything directly in dir, links out of it); names starting with '.' are
// skipped. Samples are ordered by class, then path, then time.
//
// Hostile input: a file over opt.MaxBytes is refused from its size; a
// ragged row is refused naming its line; NaN and infinities are refused
// naming file, line and column; the total size of the windows is checked
// (internal/limits) before it is allocated.
func LoadSensorFolder(dir string, opt SensorOptions) (*Signals, error) {
	opt, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	classes, err := FolderClasses(dir)
	if err != nil {
		return nil, fmt.Errorf("data: sensor: %w", err)
	}
	var recs []recording
	cols := 0               // channels of every recording, from the first
	var channels []string   // the first header's names, if any
	var first, named string // the first file, and the first with a header
	for class, name := range classes {
		err := walkClass(dir, name, func(path string) error {
			f, err := openLimited(path, opt.MaxBytes)
			if err != nil {
				return err
			}
			defer f.Close()
			names, vals, n, err := readTable(f, path, splitComma, true)
			if err != nil {
				return err
			}
			if first == "" {
				first, cols = path, n
			}
			if n != cols {
				return errorf(ErrInvalid, "data: sensor: %s has %d channels, but %s has %d: every recording needs the same channels",
					path, n, first, cols)
			}
			if names != nil && channels == nil {
				named, channels = path, names
			}
			if names != nil && strings.Join(names, ",") != strings.Join(channels, ",") {
				return errorf(ErrInvalid, "data: sensor: %s names its channels %v, but %s names them %v",
					path, names, named, channels)
			}
			recs = append(recs, recording{vals: vals, c: n, label: int32(class)})
			return nil
		})
		var k *kindError
		if errors.As(err, &k) {
			return nil, err // it names the file already
		}
		if err != nil {
			return nil, fmt.Errorf("data: sensor: %s: %w", dir, err)
		}
	}
	if cols == 0 {
		return nil, errorf(ErrInvalid, "data: sensor: %s holds no recording", dir)
	}
	if channels == nil {
		channels = defaultNames(nil, cols, "ch")
	}
	return windows(recs, cols, classes, channels, opt, dir)
}

// windows cuts recs (all of c channels) into windows as opt says and wraps
// them as Signals, normalised with opt's values or the recordings' own.
func windows(recs []recording, c int, classes, channels []string, opt SensorOptions, what string) (*Signals, error) {
	n := 0
	for _, r := range recs {
		if t := r.rows(); t >= opt.Window {
			n += (t-opt.Window)/opt.Stride + 1
		}
	}
	if n == 0 {
		return nil, errorf(ErrInvalid, "data: sensor: %s: no recording is %d steps long (the window)", what, opt.Window)
	}
	size, err := limits.Product("sensor windows", n, c, opt.Window)
	if err != nil {
		return nil, fmt.Errorf("data: sensor: %s: %w", what, err)
	}
	if _, err := limits.Bytes("sensor windows", size, 4); err != nil {
		return nil, fmt.Errorf("data: sensor: %s: %w", what, err)
	}
	x := make([]float32, 0, size)
	labels := make([]int32, 0, n)
	rec := make([]int32, 0, n)
	sum, sq := make([]float64, c), make([]float64, c)
	rows := 0
	for k, r := range recs {
		for i, v := range r.vals {
			sum[i%c] += float64(v)
			sq[i%c] += float64(float64(v) * float64(v))
		}
		rows += r.rows()
		for off := 0; off+opt.Window <= r.rows(); off += opt.Stride {
			for ch := range c {
				for t := range opt.Window {
					x = append(x, r.vals[(off+t)*c+ch])
				}
			}
			labels = append(labels, r.label)
			rec = append(rec, int32(k))
		}
	}
	mean, std := opt.Mean, opt.Std
	if len(mean) == 0 {
		mean, std = momentsToNorm(sum, sq, rows)
	}
	sig, err := NewSignals(x, labels, c, opt.Window, len(classes), mean, std, classes, channels)
	if err != nil {
		return nil, err
	}
	sig.rec = rec
	return sig, nil
}

// LoadRecording reads one recording in LoadSensorFolder's CSV format (one
// row a time step, one column a channel, an optional header row of names)
// and cuts it into windows of opt.Window steps every opt.Stride steps,
// normalised with opt.Mean and opt.Std (a model's; both empty: the
// recording's own). It is what a recording to classify becomes: its
// windows carry label 0 of a single class named after the file, and its
// channels are named by its header (or "ch0", ...). A recording shorter than
// a window, a file over opt.MaxBytes, a ragged row and NaN or an infinity
// are refused, as LoadSensorFolder refuses them.
func LoadRecording(path string, opt SensorOptions) (*Signals, error) {
	opt, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	f, err := openLimited(path, opt.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("data: sensor: %w", err)
	}
	defer f.Close()
	names, vals, c, err := readTable(f, path, splitComma, true)
	if err != nil {
		return nil, err
	}
	if c == 0 {
		return nil, errorf(ErrInvalid, "data: sensor: %s holds no samples", path)
	}
	if names == nil {
		names = defaultNames(nil, c, "ch")
	}
	return windows([]recording{{vals: vals, c: c}}, c, []string{path}, names, opt, path)
}
