package data

import (
	"bufio"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/internal/limits"
)

// UCIHARSignals returns the names of the nine inertial signals of UCI HAR, in the order
// LoadUCIHAR stacks them as channels when given none: the total
// acceleration (gravity included, in g) — what a phone's accelerometer
// reads and what GenerateAccel writes — then the body acceleration (the
// total less a 0.3 Hz low-pass gravity estimate) and the gyroscope (rad/s).
func UCIHARSignals() []string {
	return []string{
		"total_acc_x", "total_acc_y", "total_acc_z",
		"body_acc_x", "body_acc_y", "body_acc_z",
		"body_gyro_x", "body_gyro_y", "body_gyro_z",
	}
}

// LoadUCIHAR loads one split ("train" or "test") of the UCI HAR data set
// (Anguita et al. 2013) from dir, the folder "UCI HAR Dataset" of its zip:
//
//	dir/activity_labels.txt                    "1 WALKING" ... one class a line
//	dir/<split>/y_<split>.txt                  one label (1-based) a line
//	dir/<split>/Inertial Signals/<signal>_<split>.txt
//	                                           one window a line: 128 numbers
//	                                           separated by spaces
//
// signals picks the channels (names from UCIHARSignals, e.g. the three
// total_acc ones to match a 3-axis accelerometer); nil means all nine. The
// rows are windows already (2.56 s at 50 Hz, 50% overlap), so opt.Window
// must be 0 or the row length and opt.Stride is ignored. Normalisation is as
// LoadSensorFolder's (opt.Mean/Std, or computed over the windows). Every
// signal file must have as many rows as y_<split>.txt, all of one length.
func LoadUCIHAR(dir, split string, signals []string, opt SensorOptions) (*Signals, error) {
	if split != "train" && split != "test" {
		return nil, errorf(ErrInvalid, "data: uci-har: split %q, want train or test", split)
	}
	win := opt.Window
	opt.Window = 1 // resolve checks the rest; the row length decides the window
	opt, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if signals == nil {
		signals = UCIHARSignals()
	}
	for _, s := range signals {
		if !isUCIHARSignal(s) {
			return nil, errorf(ErrInvalid, "data: uci-har: no signal %q, want one of %v", s, UCIHARSignals())
		}
	}
	classes, err := readUCILabels(filepath.Join(dir, "activity_labels.txt"), opt.MaxBytes)
	if err != nil {
		return nil, err
	}
	yPath := filepath.Join(dir, split, "y_"+split+".txt")
	labels, err := readUCIY(yPath, len(classes), opt.MaxBytes)
	if err != nil {
		return nil, err
	}
	n, c := len(labels), len(signals)
	var x []float32
	l := 0
	for ch, s := range signals {
		path := filepath.Join(dir, split, "Inertial Signals", s+"_"+split+".txt")
		f, err := openLimited(path, opt.MaxBytes)
		if err != nil {
			return nil, fmt.Errorf("data: uci-har: %w", err)
		}
		_, vals, cols, err := readTable(f, path, strings.Fields, false)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("data: uci-har: %w", err)
		}
		if rows := len(vals) / cols; rows != n {
			return nil, errorf(ErrFormat, "data: uci-har: %s has %d rows, but %s has %d labels", path, rows, yPath, n)
		}
		if l == 0 {
			l = cols
			if win != 0 && win != l {
				return nil, errorf(ErrInvalid, "data: uci-har: window %d, but the rows of %s are windows of %d", win, path, l)
			}
			size, err := limits.Product("uci-har windows", n, c, l)
			if err != nil {
				return nil, fmt.Errorf("data: uci-har: %w", err)
			}
			x = make([]float32, size)
		}
		if cols != l {
			return nil, errorf(ErrFormat, "data: uci-har: %s has rows of %d values, %s of %d", path, cols, signals[0], l)
		}
		for i := range n {
			copy(x[(i*c+ch)*l:(i*c+ch+1)*l], vals[i*l:(i+1)*l])
		}
	}
	mean, std := opt.Mean, opt.Std
	if len(mean) == 0 {
		mean, std = nil, nil
	}
	return NewSignals(x, labels, c, l, len(classes), mean, std, classes, signals)
}

func isUCIHARSignal(s string) bool {
	for _, u := range UCIHARSignals() {
		if s == u {
			return true
		}
	}
	return false
}

// UCIHARClasses returns the activity names of the UCI HAR data set in dir
// (its activity_labels.txt), in label order: LoadUCIHAR's class names,
// read without loading a split.
func UCIHARClasses(dir string) ([]string, error) {
	return readUCILabels(filepath.Join(dir, "activity_labels.txt"), DefaultMaxSensorBytes)
}

// readUCILabels reads activity_labels.txt: lines "k NAME" with k = 1, 2, ...
// in order.
func readUCILabels(path string, maxBytes int64) ([]string, error) {
	f, err := openLimited(path, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("data: uci-har: %w", err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLineBytes)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		k, err := strconv.Atoi(fields[0])
		if len(fields) != 2 || err != nil || k != len(names)+1 {
			return nil, errorf(ErrFormat, "data: uci-har: %s:%d: %q, want \"%d NAME\"", path, line, sc.Text(), len(names)+1)
		}
		names = append(names, fields[1])
	}
	if err := sc.Err(); err != nil {
		return nil, errorf(ErrFormat, "data: uci-har: %s: %v", path, err)
	}
	if len(names) == 0 {
		return nil, errorf(ErrFormat, "data: uci-har: %s names no activity", path)
	}
	return names, nil
}

// readUCIY reads y_<split>.txt: one 1-based label a line, returned 0-based.
func readUCIY(path string, classes int, maxBytes int64) ([]int32, error) {
	f, err := openLimited(path, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("data: uci-har: %w", err)
	}
	defer f.Close()
	var labels []int32
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLineBytes)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		k, err := strconv.Atoi(s)
		if err != nil || k < 1 || k > classes {
			return nil, errorf(ErrFormat, "data: uci-har: %s:%d: label %q, want 1 to %d", path, line, s, classes)
		}
		labels = append(labels, int32(k-1))
	}
	if err := sc.Err(); err != nil {
		return nil, errorf(ErrFormat, "data: uci-har: %s: %v", path, err)
	}
	if len(labels) == 0 {
		return nil, errorf(ErrFormat, "data: uci-har: %s holds no label", path)
	}
	return labels, nil
}

// LoadWISDM loads a WISDM-style file (Kwapisz, Weiss and Moore, "Activity
// Recognition using Cell Phone Accelerometers", 2010; WISDM_ar_v1.1_raw.txt):
// records "user,activity,timestamp,x,y,z;" — user an integer, activity a
// name, timestamp an integer (ns), x, y, z the acceleration in m/s² sampled
// at 20 Hz. A record ends with ';'; a line may hold one or several, and an
// empty record (";;" or a blank line) is skipped. Consecutive records of one
// user and activity form one recording, cut into windows as opt says
// (mind the rate: DefaultWindow is 6.4 s at 20 Hz). Classes are the activity
// names, sorted. Channels are "x", "y", "z". A record without six fields is
// refused naming its line, as is NaN or an infinity.
func LoadWISDM(path string, opt SensorOptions) (*Signals, error) {
	opt, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	f, err := openLimited(path, opt.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("data: wisdm: %w", err)
	}
	defer f.Close()
	type run struct {
		user, activity string
		vals           []float32
	}
	var runs []run
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLineBytes)
	for line := 1; sc.Scan(); line++ {
		for _, rec := range strings.Split(sc.Text(), ";") {
			rec = strings.TrimSpace(rec)
			if rec == "" {
				continue
			}
			fields := strings.Split(rec, ",")
			if len(fields) != 6 {
				return nil, errorf(ErrFormat, "data: wisdm: %s:%d: %q has %d fields, want user,activity,timestamp,x,y,z",
					path, line, rec, len(fields))
			}
			user, activity := strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1])
			if _, err := strconv.ParseInt(user, 10, 64); err != nil || activity == "" {
				return nil, errorf(ErrFormat, "data: wisdm: %s:%d: user %q, activity %q, want an integer and a name", path, line, user, activity)
			}
			if _, err := strconv.ParseInt(strings.TrimSpace(fields[2]), 10, 64); err != nil {
				return nil, errorf(ErrFormat, "data: wisdm: %s:%d: timestamp %q is not an integer", path, line, fields[2])
			}
			if len(runs) == 0 || runs[len(runs)-1].user != user || runs[len(runs)-1].activity != activity {
				runs = append(runs, run{user: user, activity: activity})
			}
			r := &runs[len(runs)-1]
			for i := 3; i < 6; i++ {
				v, err := parseValue(fields[i], path, line, i+1)
				if err != nil {
					return nil, fmt.Errorf("data: wisdm: %w", err)
				}
				r.vals = append(r.vals, v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errorf(ErrFormat, "data: wisdm: %s: %v", path, err)
	}
	index := map[string]int32{}
	var classes []string
	for _, r := range runs {
		if _, ok := index[r.activity]; !ok {
			index[r.activity] = 0
			classes = append(classes, r.activity)
		}
	}
	if len(classes) == 0 {
		return nil, errorf(ErrFormat, "data: wisdm: %s holds no record", path)
	}
	sort.Strings(classes)
	for i, c := range classes {
		index[c] = int32(i)
	}
	recs := make([]recording, len(runs))
	for i, r := range runs {
		recs[i] = recording{vals: r.vals, c: 3, label: index[r.activity]}
	}
	return windows(recs, 3, classes, []string{"x", "y", "z"}, opt, path)
}
