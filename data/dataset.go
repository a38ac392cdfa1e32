package data

import (
	"errors"
	"fmt"
	"math"
)

// Errors that wrap the specific failure; test with errors.Is.
var (
	// ErrFormat marks a file whose bytes do not follow its format
	// (bad magic, wrong dimension count, truncation, unsupported dtype).
	ErrFormat = errors.New("data: bad format")
	// ErrInvalid marks arguments or contents that are well-formed but
	// inconsistent (label out of range, count mismatch, bad option).
	ErrInvalid = errors.New("data: invalid")
	// ErrNotFound marks a data set that could not be located.
	ErrNotFound = errors.New("data: not found")
	// ErrTooLarge marks an image (or image file) larger than the limit it
	// is read under (FolderOptions.MaxPixels): refused from its header,
	// before it is decoded.
	ErrTooLarge = errors.New("data: too large")
)

// kindError is an error whose text is msg and which errors.Is matches
// against its kind (ErrFormat, ErrInvalid, ErrNotFound). It keeps messages
// free of the sentinel's own text while still classifying them.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// errorf returns a kindError of kind with a formatted message.
func errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Dataset is a fixed, indexable set of labelled samples of one shape.
//
// Contract: Len, Shape and Classes never change. Get(i, dst) requires
// 0 <= i < Len() and len(dst) == c*h*w from Shape(); it writes sample i,
// already normalised, into dst in CHW row-major order (one NCHW image) and
// returns its label in [0, Classes()), the same values for the same i every
// time (no random augmentation: Loader.NextIDs hands i on as the sample's
// identity, under which solver caches its features). Get must not retain dst. Every
// implementation in this package is safe for concurrent Get calls; it panics
// on a bad index or a short dst, which are the caller's bugs.
type Dataset interface {
	Len() int
	Shape() (c, h, w int)
	Classes() int
	Get(i int, dst []float32) int32
}

// Labeler is implemented by data sets that can report a label without
// decoding the sample. Views such as FilterClasses use it when present.
type Labeler interface {
	// Label returns the label of sample i, equal to what Get(i, ...) returns.
	Label(i int) int32
}

// Images is an in-memory image data set. Pixels are kept as uint8 (one byte
// per channel value, CHW per sample) and normalised on Get through a
// 256-entry table per channel, so MNIST's 60,000 training images take 47 MB
// rather than 188 MB of float32.
//
// Get writes (p/255 - Mean[ch]) / Std[ch] for pixel byte p of channel ch.
// An Images value is immutable after construction and safe for concurrent use.
type Images struct {
	pix     []uint8 // n * c*h*w bytes, sample-major, CHW within a sample
	labels  []int32 // n labels in [0, classes)
	c, h, w int
	classes int
	names   []string       // class names, len classes
	mean    []float32      // per channel
	std     []float32      // per channel
	lut     [][256]float32 // lut[ch][p] = normalised value of byte p
}

var (
	_ Dataset = (*Images)(nil)
	_ Labeler = (*Images)(nil)
)

// NewImages wraps pix (n*c*h*w bytes, CHW per sample) and labels (n of them,
// each in [0, classes)) as a Dataset. mean and std hold one value per channel
// (std > 0); names, when not nil, holds one name per class, else the names
// are "0", "1", .... NewImages keeps pix and labels without copying: the
// caller must not modify them afterwards.
func NewImages(pix []uint8, labels []int32, c, h, w, classes int, mean, std []float32, names []string) (*Images, error) {
	if c < 1 || h < 1 || w < 1 {
		return nil, errorf(ErrInvalid, "data: shape %dx%dx%d, want positive dimensions", c, h, w)
	}
	if classes < 1 {
		return nil, errorf(ErrInvalid, "data: %d classes, want at least 1", classes)
	}
	size := c * h * w
	if len(pix) != len(labels)*size {
		return nil, errorf(ErrInvalid, "data: %d pixel bytes for %d labels of %dx%dx%d, want %d",
			len(pix), len(labels), c, h, w, len(labels)*size)
	}
	for i, l := range labels {
		if l < 0 || int(l) >= classes {
			return nil, errorf(ErrInvalid, "data: label %d of sample %d out of range [0,%d)", l, i, classes)
		}
	}
	if names == nil {
		names = make([]string, classes)
		for i := range names {
			names[i] = fmt.Sprint(i)
		}
	}
	if len(names) != classes {
		return nil, errorf(ErrInvalid, "data: %d class names for %d classes", len(names), classes)
	}
	m := &Images{pix: pix, labels: labels, c: c, h: h, w: w, classes: classes,
		names: append([]string(nil), names...)}
	if err := m.setNorm(mean, std); err != nil {
		return nil, err
	}
	return m, nil
}

// setNorm validates mean and std (one value per channel) and builds the
// lookup tables. The table entry is computed in float64 and rounded once, so
// Get agrees with float32((p/255 - mean)/std) computed in float64.
func (m *Images) setNorm(mean, std []float32) error {
	if len(mean) != m.c || len(std) != m.c {
		return errorf(ErrInvalid, "data: %d means and %d stds for %d channels", len(mean), len(std), m.c)
	}
	for ch, s := range std {
		if !(s > 0) || math.IsInf(float64(s), 0) {
			return errorf(ErrInvalid, "data: std[%d] = %v, want finite and > 0", ch, s)
		}
		if math.IsNaN(float64(mean[ch])) || math.IsInf(float64(mean[ch]), 0) {
			return errorf(ErrInvalid, "data: mean[%d] = %v, want finite", ch, mean[ch])
		}
	}
	m.mean = append([]float32(nil), mean...)
	m.std = append([]float32(nil), std...)
	m.lut = make([][256]float32, m.c)
	for ch := range m.lut {
		mu, sd := float64(mean[ch]), float64(std[ch])
		for p := range 256 {
			v := float32((float64(p)/255 - mu) / sd)
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				// A std so small (a subnormal) that a pixel overflows:
				// training on it would be training on infinities.
				return errorf(ErrInvalid, "data: mean %v and std %v map pixel value %d of channel %d to %v, want finite values",
					mean[ch], std[ch], p, ch, v)
			}
			m.lut[ch][p] = v
		}
	}
	return nil
}

// CheckFinite returns an error wrapping ErrInvalid that names the first
// NaN or infinity of x, a batch of samples of c×h×w values, by sample and
// position; nil when every value is finite. Inputs read from a file (a
// .npy tensor) go through it before a network sees them.
func CheckFinite(x []float32, c, h, w int) error {
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			size := max(c*h*w, 1)
			k := i % size
			return errorf(ErrInvalid, "element %d (sample %d, channel %d, row %d, column %d) is %v: inputs must be finite",
				i, i/size, k/max(h*w, 1), k%max(h*w, 1)/max(w, 1), k%max(w, 1), v)
		}
	}
	return nil
}

// WithNorm returns a copy of m that normalises with the given per-channel
// mean and std instead. The copy shares m's pixels and labels.
func (m *Images) WithNorm(mean, std []float32) (*Images, error) {
	n := *m
	if err := n.setNorm(mean, std); err != nil {
		return nil, err
	}
	return &n, nil
}

// Len returns the number of samples.
func (m *Images) Len() int { return len(m.labels) }

// Shape returns channels, height and width of one sample.
func (m *Images) Shape() (c, h, w int) { return m.c, m.h, m.w }

// Classes returns the number of classes; labels lie in [0, Classes()).
func (m *Images) Classes() int { return m.classes }

// ClassNames returns one name per class, indexed by label: the sorted
// sub-folder names for LoadImageFolder, "0".."9" for MNIST. The caller may
// modify the returned slice.
func (m *Images) ClassNames() []string { return append([]string(nil), m.names...) }

// Norm returns copies of the per-channel mean and std used by Get.
func (m *Images) Norm() (mean, std []float32) {
	return append([]float32(nil), m.mean...), append([]float32(nil), m.std...)
}

// Label returns the label of sample i without decoding it.
func (m *Images) Label(i int) int32 { return m.labels[i] }

// Pixels returns the raw bytes of sample i (CHW). The slice aliases m's
// storage and must not be modified.
func (m *Images) Pixels(i int) []uint8 {
	size := m.c * m.h * m.w
	return m.pix[i*size : (i+1)*size : (i+1)*size]
}

// Get writes the normalised sample i into dst (len c*h*w) and returns its
// label. It panics if i is out of range or len(dst) is wrong.
func (m *Images) Get(i int, dst []float32) int32 {
	plane := m.h * m.w
	if len(dst) != m.c*plane {
		panic(fmt.Sprintf("data: Get: dst has %d floats, want %d (%dx%dx%d)", len(dst), m.c*plane, m.c, m.h, m.w))
	}
	src := m.Pixels(i)
	for ch := range m.c {
		lut := &m.lut[ch]
		s := src[ch*plane : (ch+1)*plane]
		d := dst[ch*plane : (ch+1)*plane]
		d = d[:len(s)] // lets the compiler drop the bounds check below
		for j, p := range s {
			d[j] = lut[p]
		}
	}
	return m.labels[i]
}
