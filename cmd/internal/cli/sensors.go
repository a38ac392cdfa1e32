package cli

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
)

// WindowUsage and StrideUsage are the help texts of --window and --stride,
// the commands' flags that cut sensor recordings into windows.
const (
	WindowUsage = "sensor data: window length in time steps (0: the model's input length, or 128 — 2.56 s at 50 Hz — for a new model)"
	StrideUsage = "sensor data: steps between the starts of consecutive windows (0: the model's recorded stride, or 64: half a window)"
)

// loadSignals loads sensor recordings of the given kind into d: windows of
// o.Window steps every o.Stride steps, normalised with o.Norm (or, given
// none, with the training recordings' per-channel mean and std, which d.Norm
// then holds for the model to record).
//
//   - KindSensors: a folder of CSV recordings per activity
//     (data.LoadSensorFolder), or train/ and test/ of that layout;
//   - KindUCIHAR: UCI HAR's train and test splits (data.LoadUCIHAR), its
//     rows 128-step windows already; a model of 3 input channels (and a
//     new model) takes total_acc x, y, z — what a phone's accelerometer
//     reads — and one of 9 all nine signals;
//   - KindWISDM: one file (data.LoadWISDM), split by o.Holdout.
//
// A single folder or file is split by o.Holdout into whole recordings
// (holdOutRecordings), so that no held-out window shares a step with a
// training one; where that cannot be (an activity with one recording only
// in every class), into windows, and since windows overlap when the stride
// is below the window, the split then says that held-out windows share
// steps with training ones. Recordings given as train/ and test/ (or
// separate folders for the hub and the workers) are kept apart as given.
func loadSignals(d *Data, spec string, kind DataKind, o DataOptions) error {
	// The training part is read with its own statistics and then given
	// o.Norm, once its channel count is known to be the model's: a
	// mismatch is then named as one of channels, not of means.
	opt := data.SensorOptions{Window: o.Window, Stride: o.Stride}
	if o.Input.W > 0 {
		if opt.Window == 0 {
			opt.Window = o.Input.W
		}
		if opt.Window != o.Input.W {
			return fmt.Errorf("%w: --window %d: the model takes windows of %d steps (input %dx%dx%d); give --window %d or leave it out",
				ErrUsage, opt.Window, o.Input.W, o.Input.C, o.Input.H, o.Input.W, o.Input.W)
		}
	}
	if opt.Window == 0 {
		opt.Window = data.DefaultWindow
	}
	if opt.Stride == 0 {
		opt.Stride = data.DefaultStride
	}
	var train, test *data.Signals
	var err error
	switch kind {
	case KindUCIHAR:
		var signals []string // nil: all nine
		switch o.Input.C {
		case 0, 3:
			signals = data.UCIHARSignals()[:3]
		case 9:
		default:
			return fmt.Errorf("%w: the model takes %d channels; UCI HAR gives 3 (total_acc x, y, z) or all 9 signals", ErrUsage, o.Input.C)
		}
		if train, err = data.LoadUCIHAR(spec, "train", signals, opt); err != nil {
			return err
		}
		if train, err = withNorm(train, spec, o); err != nil {
			return err
		}
		opt.Mean, opt.Std = train.Norm()
		if fileExists(filepath.Join(spec, "test", "y_test.txt")) {
			if test, err = data.LoadUCIHAR(spec, "test", signals, opt); err != nil {
				return err
			}
		}
	case KindSensors:
		dir := spec
		if hasSplit(spec) {
			dir = filepath.Join(spec, "train")
		}
		if train, err = data.LoadSensorFolder(dir, opt); err != nil {
			return err
		}
		if train, err = withNorm(train, spec, o); err != nil {
			return err
		}
		if hasSplit(spec) {
			opt.Mean, opt.Std = train.Norm()
			if test, err = data.LoadSensorFolder(filepath.Join(spec, "test"), opt); err != nil {
				return err
			}
			if err := sameLabels(spec, train.ClassNames(), test.ClassNames()); err != nil {
				return err
			}
		}
	case KindWISDM:
		if train, err = data.LoadWISDM(spec, opt); err != nil {
			return err
		}
		if train, err = withNorm(train, spec, o); err != nil {
			return err
		}
	}
	_, _, l := train.Shape()
	d.Labels = train.ClassNames()
	mean, std := train.Norm()
	d.Norm = models.Norm{Mean: mean, Std: std}
	d.Signals = models.Signals{Channels: train.Channels(), Stride: opt.Stride}
	if test != nil {
		d.Train, d.Test = train, test
		d.Split = fmt.Sprintf("train/ (%d windows) and test/ (%d windows) of %d steps", train.Len(), test.Len(), l)
		if kind == KindUCIHAR {
			d.Split = fmt.Sprintf("UCI HAR's train (%d windows) and test (%d windows) splits", train.Len(), test.Len())
		}
		return nil
	}
	if o.Holdout > 0 {
		if ok, err := holdOutRecordings(d, train, spec, o, l); ok || err != nil {
			return err
		}
	}
	caveat := ""
	if opt.Stride < opt.Window {
		caveat = fmt.Sprintf("; windows overlap (--stride %d < --window %d), so held-out windows share steps with training ones: give train/ and test/ folders for a clean test", opt.Stride, opt.Window)
	}
	return holdOut(d, train, spec, o, fmt.Sprintf("windows of %d steps", l), caveat)
}

// holdOutRecordings splits sensor data by whole recordings: of each
// activity's recordings, the fraction o.Holdout (rounded, at least one
// where the activity has two or more, never all) drawn by a shuffle seeded
// with o.Seed goes to Test with all its windows, the rest to Train. So no
// held-out window shares a time step with a training window, however the
// windows overlap. It reports false, leaving d alone, where the loader
// does not know the recordings or no activity has two of them; the caller
// then splits windows.
func holdOutRecordings(d *Data, all *data.Signals, spec string, o DataOptions, l int) (bool, error) {
	train, test, held, recs := splitRecordings(all, o.Holdout, o.Seed)
	if held == 0 {
		return false, nil
	}
	d.Train, d.Test, d.Holdout = data.Subset(all, train), data.Subset(all, test), o.Holdout
	d.Split = fmt.Sprintf("%d of %d windows of %d steps to train, %d held out to test: %d of %d recordings, drawn per activity (--holdout %v), so no held-out window shares a step with a training one",
		len(train), all.Len(), l, len(test), held, recs, o.Holdout)
	return true, nil
}

// splitRecordings returns holdOutRecordings' split of all's windows (in
// order), how many recordings it held out and how many there are; held is
// 0 where it cannot split by recording.
func splitRecordings(all *data.Signals, holdout float64, seed uint64) (train, test []int, held, recs int) {
	byClass := map[int32][]int{} // recordings of each class, in order of first window
	windowsOf := map[int][]int{}
	for i := range all.Len() {
		r, ok := all.Recording(i)
		if !ok {
			return nil, nil, 0, 0
		}
		if windowsOf[r] == nil {
			byClass[all.Label(i)] = append(byClass[all.Label(i)], r)
		}
		windowsOf[r] = append(windowsOf[r], i)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	for c := range int32(all.Classes()) {
		rs := byClass[c]
		recs += len(rs)
		k := 0
		if len(rs) >= 2 {
			k = min(max(int(math.Round(holdout*float64(len(rs)))), 1), len(rs)-1)
		}
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		for j, r := range rs {
			if j < k {
				test = append(test, windowsOf[r]...)
			} else {
				train = append(train, windowsOf[r]...)
			}
		}
		held += k
	}
	slices.Sort(train)
	slices.Sort(test)
	return train, test, held, recs
}

// withNorm checks that train has the model's channels and gives it o.Norm;
// without one (a new model) it keeps its own statistics.
func withNorm(train *data.Signals, spec string, o DataOptions) (*data.Signals, error) {
	c, _, _ := train.Shape()
	if o.Input.C > 0 && c != o.Input.C {
		return nil, fmt.Errorf("%w: data %s has recordings of %d channels (%s), the model takes %d", ErrUsage, spec, c, strings.Join(train.Channels(), ", "), o.Input.C)
	}
	if len(o.Norm.Mean) == 0 && len(o.Norm.Std) == 0 {
		return train, nil
	}
	return train.WithNorm(o.Norm.Mean, o.Norm.Std)
}

// isWISDM reports whether path's first non-empty record reads
// "user,activity,time,x,y,z" (WISDM's raw file: records end with ';').
// It reads at most the first line, up to 4 KiB.
func isWISDM(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 4096)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		rec, _, ended := strings.Cut(line, ";")
		fields := strings.Split(rec, ",")
		if !ended || len(fields) != 6 || strings.TrimSpace(fields[1]) == "" {
			return false
		}
		for _, i := range []int{0, 2, 3, 4, 5} {
			if _, err := strconv.ParseFloat(strings.TrimSpace(fields[i]), 64); err != nil {
				return false
			}
		}
		return true
	}
	return false
}

// SameChannels reports whether recordings whose channels are named have
// may be read as a model trained on channels want: the same names, case
// aside, in the same order, or the "ch0", "ch1", ... of recordings without
// a header (taken in the model's order).
func SameChannels(have, want []string) bool {
	if len(have) != len(want) {
		return false
	}
	named, same := false, true
	for i := range have {
		named = named || have[i] != fmt.Sprint("ch", i)
		same = same && strings.EqualFold(have[i], want[i])
	}
	return same || !named
}

// checkSignals reads every recording of sensor data (CheckData): each row
// a window of one step, so that a recording of any length is read and a
// broken one (a ragged row, NaN, a file too large) is named before the
// model, and so the window, is known.
func checkSignals(spec string, kind DataKind) error {
	one := data.SensorOptions{Window: 1, Stride: 1}
	var err error
	switch kind {
	case KindUCIHAR:
		_, err = data.LoadUCIHAR(spec, "train", nil, data.SensorOptions{})
	case KindWISDM:
		_, err = data.LoadWISDM(spec, one)
	default:
		dirs := []string{spec}
		if hasSplit(spec) {
			dirs = []string{filepath.Join(spec, "train"), filepath.Join(spec, "test")}
		}
		for _, dir := range dirs {
			if _, err = data.LoadSensorFolder(dir, one); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("cli: --data %s: %w: fix or remove the file", spec, err)
	}
	return nil
}
