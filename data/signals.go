package data

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/internal/limits"
)

// Signals is an in-memory data set of fixed-length windows of multichannel
// time series: sensor recordings (accelerometer, gyroscope) cut into
// windows. A sample is C channels of L time steps; Shape reports it as
// (C, 1, L), so a batch is N×C×1×L — the N×C×L layout of a 1-D convolution
// with a unit height — and every Dataset consumer (Loader, Shard, Subset,
// FilterClasses) takes it unchanged.
//
// Values are kept raw (in the recording's units) and normalised on Get:
// Get writes (x - Mean[ch]) / Std[ch]. The mean and standard deviation are
// per channel, computed on the training recordings by the loaders (or
// given), and travel with the model as image normalisation does (Norm,
// WithNorm): a test set is normalised with the training set's values.
//
// A Signals value is immutable after construction and safe for concurrent
// use.
type Signals struct {
	x        []float32 // n * c*l raw values, sample-major, channel-major within a sample
	labels   []int32
	c, l     int
	classes  int
	names    []string // class names, len classes
	channels []string // channel names, len c
	mean     []float32
	std      []float32
	// rec is the recording each window was cut from (an index into the
	// loader's recordings), when the loader knows it (LoadSensorFolder,
	// LoadWISDM, AccelSignals); nil otherwise (NewSignals, LoadUCIHAR,
	// whose rows are windows already).
	rec []int32
}

var (
	_ Dataset = (*Signals)(nil)
	_ Labeler = (*Signals)(nil)
)

// NewSignals wraps x (n*c*l raw values, channel-major per sample: value t of
// channel ch of sample i at x[(i*c+ch)*l+t]) and labels (n of them, in
// [0, classes)) as a Dataset. Every value must be finite. mean and std hold
// one value per channel (std > 0); both nil means compute them from x
// (SignalStats). names (one per class) and channels (one per channel) may be
// nil, meaning "0", "1", ... and "ch0", "ch1", .... x and labels are kept
// without copying: the caller must not modify them afterwards.
func NewSignals(x []float32, labels []int32, c, l, classes int, mean, std []float32, names, channels []string) (*Signals, error) {
	if c < 1 || l < 1 {
		return nil, errorf(ErrInvalid, "data: signals: %d channels of %d steps, want positive sizes", c, l)
	}
	if classes < 1 {
		return nil, errorf(ErrInvalid, "data: signals: %d classes, want at least 1", classes)
	}
	size, err := limits.Product("signal window", c, l)
	if err != nil {
		return nil, fmt.Errorf("data: signals: %w", err)
	}
	if len(x) != len(labels)*size {
		return nil, errorf(ErrInvalid, "data: signals: %d values for %d labels of %d×%d, want %d",
			len(x), len(labels), c, l, len(labels)*size)
	}
	for i, lb := range labels {
		if lb < 0 || int(lb) >= classes {
			return nil, errorf(ErrInvalid, "data: signals: label %d of sample %d out of range [0,%d)", lb, i, classes)
		}
	}
	if err := CheckFinite(x, c, 1, l); err != nil {
		return nil, fmt.Errorf("data: signals: %w", err)
	}
	names = defaultNames(names, classes, "")
	channels = defaultNames(channels, c, "ch")
	if len(names) != classes {
		return nil, errorf(ErrInvalid, "data: signals: %d class names for %d classes", len(names), classes)
	}
	if len(channels) != c {
		return nil, errorf(ErrInvalid, "data: signals: %d channel names for %d channels", len(channels), c)
	}
	if mean == nil && std == nil {
		mean, std = SignalStats(x, c, l)
	}
	s := &Signals{x: x, labels: labels, c: c, l: l, classes: classes,
		names: append([]string(nil), names...), channels: append([]string(nil), channels...)}
	if err := s.setNorm(mean, std); err != nil {
		return nil, err
	}
	return s, nil
}

// defaultNames returns names, or prefix0, prefix1, ... when names is nil.
func defaultNames(names []string, n int, prefix string) []string {
	if names != nil {
		return names
	}
	names = make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint(prefix, i)
	}
	return names
}

// SignalStats returns the per-channel mean and standard deviation
// (population, computed in float64) of x, samples of c channels × l steps
// laid out as NewSignals takes them. A channel that never varies gets std 1,
// so that it normalises to a constant instead of dividing by zero.
func SignalStats(x []float32, c, l int) (mean, std []float32) {
	sum := make([]float64, c)
	sq := make([]float64, c)
	n := 0
	for i := 0; i+c*l <= len(x); i += c * l {
		for ch := range c {
			for _, v := range x[i+ch*l : i+(ch+1)*l] {
				sum[ch] += float64(v)
				sq[ch] += float64(float64(v) * float64(v))
			}
		}
		n += l
	}
	return momentsToNorm(sum, sq, n)
}

// momentsToNorm turns per-channel sums and sums of squares over n values
// into a mean and a std (1 where the variance is not positive).
func momentsToNorm(sum, sq []float64, n int) (mean, std []float32) {
	mean, std = make([]float32, len(sum)), make([]float32, len(sum))
	for ch := range sum {
		if n == 0 {
			std[ch] = 1
			continue
		}
		m := sum[ch] / float64(n)
		v := sq[ch]/float64(n) - float64(m*m) // float64(): not fused on any target
		mean[ch] = float32(m)
		std[ch] = 1
		if sd := math.Sqrt(max(v, 0)); sd > 1e-6*max(1, math.Abs(m)) {
			std[ch] = float32(sd)
		}
	}
	return mean, std
}

// setNorm validates mean and std (one finite value per channel, std > 0).
func (s *Signals) setNorm(mean, std []float32) error {
	if len(mean) != s.c || len(std) != s.c {
		return errorf(ErrInvalid, "data: signals: %d means and %d stds for %d channels", len(mean), len(std), s.c)
	}
	for ch := range mean {
		if m := float64(mean[ch]); math.IsNaN(m) || math.IsInf(m, 0) {
			return errorf(ErrInvalid, "data: signals: mean[%d] = %v, want finite", ch, mean[ch])
		}
		if sd := float64(std[ch]); !(sd > 0) || math.IsInf(sd, 0) {
			return errorf(ErrInvalid, "data: signals: std[%d] = %v, want finite and > 0", ch, std[ch])
		}
	}
	s.mean = append([]float32(nil), mean...)
	s.std = append([]float32(nil), std...)
	return nil
}

// WithNorm returns a copy of s that normalises with the given per-channel
// mean and std (a training set's, for its test set). The copy shares s's
// values and labels.
func (s *Signals) WithNorm(mean, std []float32) (*Signals, error) {
	n := *s
	if err := n.setNorm(mean, std); err != nil {
		return nil, err
	}
	return &n, nil
}

// Len returns the number of windows.
func (s *Signals) Len() int { return len(s.labels) }

// Shape returns (channels, 1, window length).
func (s *Signals) Shape() (c, h, w int) { return s.c, 1, s.l }

// Classes returns the number of classes; labels lie in [0, Classes()).
func (s *Signals) Classes() int { return s.classes }

// ClassNames returns one name per class, indexed by label. The caller may
// modify the returned slice.
func (s *Signals) ClassNames() []string { return append([]string(nil), s.names...) }

// Channels returns one name per channel: a CSV header's names, UCI HAR's
// signal names, "x", "y", "z" for WISDM, else "ch0", "ch1", ....
func (s *Signals) Channels() []string { return append([]string(nil), s.channels...) }

// Norm returns copies of the per-channel mean and std used by Get.
func (s *Signals) Norm() (mean, std []float32) {
	return append([]float32(nil), s.mean...), append([]float32(nil), s.std...)
}

// Label returns the label of window i.
func (s *Signals) Label(i int) int32 { return s.labels[i] }

// Recording returns the index of the recording window i was cut from, and
// whether s knows it. Windows of one recording overlap when the stride is
// below the window: a held-out set that must share no time step with the
// training set takes whole recordings (cmd/internal/cli's --holdout does).
func (s *Signals) Recording(i int) (int, bool) {
	if s.rec == nil {
		return 0, false
	}
	return int(s.rec[i]), true
}

// Raw returns the raw values of window i (c×l, channel-major). The slice
// aliases s's storage and must not be modified.
func (s *Signals) Raw(i int) []float32 {
	size := s.c * s.l
	return s.x[i*size : (i+1)*size : (i+1)*size]
}

// Get writes the normalised window i into dst (len c*l, channel-major) and
// returns its label. It panics if i is out of range or len(dst) is wrong.
func (s *Signals) Get(i int, dst []float32) int32 {
	if len(dst) != s.c*s.l {
		panic(fmt.Sprintf("data: Signals.Get: dst has %d floats, want %d (%d×%d)", len(dst), s.c*s.l, s.c, s.l))
	}
	src := s.Raw(i)
	for ch := range s.c {
		m, sd := s.mean[ch], s.std[ch]
		d := dst[ch*s.l : (ch+1)*s.l]
		for t, v := range src[ch*s.l : (ch+1)*s.l] {
			d[t] = (v - m) / sd
		}
	}
	return s.labels[i]
}
