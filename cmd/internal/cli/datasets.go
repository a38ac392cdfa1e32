package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// DataKind is the kind of a --data value. KindOf decides it, in one place
// for every command; LoadData and DataLabels dispatch on it.
type DataKind string

// The kinds of --data.
const (
	KindMNIST   DataKind = "mnist"   // "mnist": MNIST from the Go module cache
	KindIDX     DataKind = "idx"     // a folder of MNIST-named IDX files
	KindImages  DataKind = "images"  // one subfolder of images per class (or train/ and test/ of that)
	KindSensors DataKind = "sensors" // one subfolder of CSV recordings per activity (or train/ and test/ of that)
	KindUCIHAR  DataKind = "uci-har" // UCI HAR's folder (activity_labels.txt, train/, test/)
	KindWISDM   DataKind = "wisdm"   // a WISDM-style file of "user,activity,time,x,y,z;" records
	KindText    DataKind = "text"    // a .txt file or a folder of .txt files: language modelling
)

// Unit names one sample of the kind in progress lines and rates: "img"
// for images, "window" for sensor windows, "word" for text (each sample
// predicts one next word).
func (k DataKind) Unit() string {
	switch k {
	case KindSensors, KindUCIHAR, KindWISDM:
		return "window"
	case KindText:
		return "word"
	}
	return "img"
}

// Signals reports whether the kind is sensor recordings: samples of C
// channels × L steps, input C×1×L.
func (k DataKind) Signals() bool { return k == KindSensors || k == KindUCIHAR || k == KindWISDM }

// DataUsage is the help text of --data for the commands that train or
// evaluate.
const DataUsage = `"mnist", a folder of MNIST IDX files, an image folder (one subfolder per class: the sorted subfolder names are the classes), ` +
	`a folder of sensor recordings (one subfolder per activity holding CSV files: rows are time steps, columns channels), ` +
	`UCI HAR's folder, a WISDM-style file, or text for a language model (a .txt file or a folder of .txt files); ` +
	`an image or recording folder may hold train/ and test/ of that layout`

// KindOf says what kind of data a --data value names:
//   - "mnist" is KindMNIST, a folder with train-images-idx3-ubyte[.gz]
//     KindIDX;
//   - a folder holding activity_labels.txt is KindUCIHAR;
//   - a folder whose first file in a class subfolder (sorted, names
//     starting with '.' skipped; under train/ when it has train/ and
//     test/) ends in .csv is KindSensors, any other folder KindImages;
//   - a file whose first record reads "user,activity,time,x,y,z;" is
//     KindWISDM, any other .txt file KindText, and so is a folder holding
//     .txt files and nothing else (IsText).
func KindOf(spec string) (DataKind, error) {
	if spec == "mnist" {
		return KindMNIST, nil
	}
	if isIDXDir(spec) {
		return KindIDX, nil
	}
	st, err := os.Stat(spec)
	if err != nil {
		return "", fmt.Errorf("cli: --data %q is neither \"mnist\" nor a folder or file: %w", spec, err)
	}
	if !st.IsDir() {
		if isWISDM(spec) {
			return KindWISDM, nil
		}
		if IsText(spec) {
			return KindText, nil
		}
		return "", fmt.Errorf("cli: --data %q is a file, but neither a WISDM-style file of \"user,activity,time,x,y,z;\" records nor text (.txt); want \"mnist\", a folder or such a file", spec)
	}
	if fileExists(filepath.Join(spec, "activity_labels.txt")) {
		return KindUCIHAR, nil
	}
	if IsText(spec) {
		return KindText, nil
	}
	root := spec
	if hasSplit(spec) {
		root = filepath.Join(spec, "train")
	}
	if strings.EqualFold(filepath.Ext(firstClassFile(root)), ".csv") {
		return KindSensors, nil
	}
	return KindImages, nil
}

// firstClassFile returns the first regular file, in sorted walk order,
// inside a subfolder of dir, skipping names that start with '.'; "" when
// there is none (the loader then says what is wrong).
func firstClassFile(dir string) string {
	var first string
	stop := errors.New("found")
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // the loader reports it
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && filepath.Dir(path) != dir {
			first = path
			return stop
		}
		return nil
	})
	return first
}

// Data is a training set and a test set of one input shape.
type Data struct {
	Train, Test data.Dataset
	Name        string
	Kind        DataKind
	// Labels names the classes, indexed by label: an image folder's sorted
	// class sub-folder names, "0".."9" for MNIST and IDX files.
	Labels []string
	// Split says, for a person, where Train and Test came from: "MNIST's
	// training and test sets", "train/ and test/", "32 of 36 images to
	// train, 4 held out (--holdout 0.1)" or "all 36 images". Commands print
	// it and store it with the run, so that a test figure is never read as
	// covering more than it does.
	Split string
	// Holdout is the fraction of a single image folder held out for
	// testing; 0 where none was (the folder is both Train and Test, or the
	// data came split).
	Holdout float64
	// Norm is the normalisation applied to both sets: DataOptions.Norm, or
	// for sensor data given none the training recordings' per-channel
	// mean and std.
	Norm models.Norm
	// Signals holds, for sensor data, the channel names and the stride the
	// windows were cut with (the window is the input's W), as a model's
	// meta records them (models.WithSignals).
	Signals models.Signals
	// Vocab maps words to ids, for text: the labels are token ids and
	// Labels is nil (a language model's classes are its words).
	Vocab *data.Vocab
}

// DataOptions say how LoadData reads a --data value for a model.
type DataOptions struct {
	// Input is the model's input shape. For sensor data a zero Input
	// means a model to be built for the data: its C and W are then the
	// data's channels and window.
	Input solver.Shape
	// Norm is the model's normalisation, applied to every sample. For
	// sensor data it is in the recordings' units, and an empty Norm means
	// compute it on the training recordings (Data.Norm says what came).
	Norm models.Norm
	// Classes, when not empty, keeps only those labels (their numbers
	// unchanged).
	Classes []int
	// Holdout is the fraction of a single folder (or WISDM file) held out
	// to test, drawn by a shuffle seeded with Seed; 0 makes the whole of it
	// both Train and Test: what evaluation (the hub's --data, cotrain eval)
	// and a worker's training want.
	Holdout float64
	Seed    uint64
	// MaxPixels caps an image's width × height, read from its header before
	// it is decoded (data.FolderOptions.MaxPixels; 0 is
	// data.DefaultMaxPixels).
	MaxPixels int
	// Window and Stride cut sensor recordings into windows (--window,
	// --stride). Window 0 is the model's input length (Input.W), or
	// data.DefaultWindow for a model to be built; a Window other than a
	// given Input.W is refused, naming both. Stride 0 is data.DefaultStride.
	Window, Stride int
	// Vocab maps the words of text to ids: the model's, the hub's or a
	// --vocab file's; nil builds one from the text. Context is the words
	// of context of a sample for a model to be built (Input zero; 0 is
	// data.DefaultContext); a model's own is its Input.W.
	Vocab   *data.Vocab
	Context int
}

// LoadData resolves a --data value (KindOf says which kind it is):
//   - "mnist": real MNIST, found in the Go module cache;
//   - a folder with MNIST-named IDX files (train-images-idx3-ubyte[.gz], ...);
//   - an image folder (one subfolder per class), or one with train/ and test/
//     subfolders of that layout (with the same classes); images are resized
//     to the input;
//   - sensor recordings (loadSignals): a folder of CSV recordings per
//     activity (or train/ and test/ of that), UCI HAR's folder, a WISDM
//     file; cut into windows of o.Window steps every o.Stride steps.
//
// A single folder is split only when o.Holdout is above 0. Every sample is
// normalised with o.Norm, the model's (models.InputNorm). Data whose fixed
// shape the model cannot take (MNIST for an RGB model, recordings for an
// image model) is refused in plain words first (CheckFit).
func LoadData(spec string, o DataOptions) (*Data, error) {
	kind, err := KindOf(spec)
	if err != nil {
		return nil, err
	}
	if !(o.Holdout >= 0 && o.Holdout < 1) {
		return nil, fmt.Errorf("%w: --holdout %v: want a fraction from 0 (none) up to, not including, 1", ErrUsage, o.Holdout)
	}
	if kind == KindText {
		return loadText(spec, o)
	}
	fresh := kind.Signals() && o.Input == (solver.Shape{})
	if !fresh {
		if err := checkFit(kind, spec, o.Input); err != nil {
			return nil, err
		}
	}
	// Sensor data given no normalisation computes its own; a model to be
	// built has no channel count to check one against before the data
	// says (data.NewSignals checks it then).
	computeNorm := kind.Signals() && len(o.Norm.Mean) == 0 && len(o.Norm.Std) == 0
	if !computeNorm && !fresh {
		if err := o.Norm.Check(o.Input.C); err != nil {
			return nil, fmt.Errorf("cli: data %s: %w", spec, err)
		}
	}
	d := &Data{Name: spec, Kind: kind, Norm: o.Norm}
	switch kind {
	case KindMNIST, KindIDX:
		if err := loadIDX(d, spec, kind, o.Norm); err != nil {
			return nil, err
		}
	case KindImages:
		if err := loadImages(d, spec, o); err != nil {
			return nil, err
		}
	default:
		if err := loadSignals(d, spec, kind, o); err != nil {
			return nil, err
		}
	}
	if len(o.Classes) > 0 {
		seen := map[int]bool{}
		for _, c := range o.Classes {
			if c < 0 || c >= d.Train.Classes() || seen[c] {
				return nil, fmt.Errorf("cli: class %d: data %s has classes 0-%d (each given once)", c, spec, d.Train.Classes()-1)
			}
			seen[c] = true
		}
		d.Train = data.FilterClasses(d.Train, o.Classes, false)
		d.Test = data.FilterClasses(d.Test, o.Classes, false)
	}
	c, h, w := d.Train.Shape()
	if got := (solver.Shape{C: c, H: h, W: w}); got != o.Input && !fresh {
		return nil, fmt.Errorf("cli: data %s has samples of %dx%dx%d, the model takes %v", spec, c, h, w, o.Input)
	}
	return d, nil
}

// loadIDX loads MNIST or a folder of IDX files into d.
func loadIDX(d *Data, spec string, kind DataKind, norm models.Norm) error {
	var train, test *data.Images
	var err error
	if kind == KindMNIST {
		if train, err = data.LoadMNIST("train", os.Getenv); err != nil {
			return err
		}
		if test, err = data.LoadMNIST("test", os.Getenv); err != nil {
			return err
		}
	} else {
		if train, err = data.LoadIDX(idxPath(spec, "train-images-idx3-ubyte"), idxPath(spec, "train-labels-idx1-ubyte")); err != nil {
			return err
		}
		if test, err = data.LoadIDX(idxPath(spec, "t10k-images-idx3-ubyte"), idxPath(spec, "t10k-labels-idx1-ubyte")); err != nil {
			return err
		}
	}
	if d.Train, err = train.WithNorm(norm.Mean, norm.Std); err != nil {
		return err
	}
	if d.Test, err = test.WithNorm(norm.Mean, norm.Std); err != nil {
		return err
	}
	d.Labels = train.ClassNames()
	if kind == KindMNIST {
		d.Split = fmt.Sprintf("MNIST's %d training and %d test images", train.Len(), test.Len())
	} else {
		d.Split = fmt.Sprintf("the IDX files' %d training and %d test images", train.Len(), test.Len())
	}
	return nil
}

// loadImages loads an image folder, or its train/ and test/, into d.
func loadImages(d *Data, spec string, o DataOptions) error {
	in := o.Input
	opt := data.FolderOptions{C: in.C, H: in.H, W: in.W, Mean: o.Norm.Mean, Std: o.Norm.Std, MaxPixels: o.MaxPixels}
	if hasSplit(spec) {
		train, err := data.LoadImageFolder(filepath.Join(spec, "train"), opt)
		if err != nil {
			return err
		}
		test, err := data.LoadImageFolder(filepath.Join(spec, "test"), opt)
		if err != nil {
			return err
		}
		if err := sameLabels(spec, train.ClassNames(), test.ClassNames()); err != nil {
			return err
		}
		d.Train, d.Test, d.Labels = train, test, train.ClassNames()
		d.Split = fmt.Sprintf("train/ (%d images) and test/ (%d images)", train.Len(), test.Len())
		return nil
	}
	all, err := data.LoadImageFolder(spec, opt)
	if err != nil {
		return err
	}
	d.Labels = all.ClassNames()
	return holdOut(d, all, spec, o, "images", "")
}

// holdOut makes all both Train and Test (o.Holdout 0) or splits it, and
// says so in d.Split, counting noun ("images"); caveat, if any, is added
// to a split's description.
func holdOut(d *Data, all data.Dataset, spec string, o DataOptions, noun, caveat string) error {
	if o.Holdout == 0 {
		d.Train, d.Test = all, all
		d.Split = fmt.Sprintf("all %d %s", all.Len(), noun)
		return nil
	}
	var err error
	if d.Train, d.Test, err = split(all, o.Holdout, o.Seed); err != nil {
		return fmt.Errorf("cli: data %s: %w", spec, err)
	}
	d.Holdout = o.Holdout
	d.Split = fmt.Sprintf("%d of %d %s to train, %d held out to test (--holdout %v)%s",
		d.Train.Len(), all.Len(), noun, d.Test.Len(), o.Holdout, caveat)
	return nil
}

// MaxPixelsUsage is the help of the --max-pixels flag of the commands that
// read images.
const MaxPixelsUsage = "the largest image read, in pixels (width × height, checked from the file's header before decoding it); larger images are refused"

// DataLabels returns the class names of a --data value without loading its
// samples where it can: what LoadData's Labels will be. A worker sends them
// when it registers, before it knows the model, and loads the samples after
// (a broken file shows then, as a broken image in a folder does). A WISDM
// file names its activities only in its records, so it is read whole.
func DataLabels(spec string) ([]string, error) {
	kind, err := KindOf(spec)
	if err != nil {
		return nil, err
	}
	switch kind {
	case KindText:
		return nil, nil // token ids: the words come with the hub's model
	case KindMNIST, KindIDX:
		return models.NumberedLabels(10), nil // data.LoadIDX's ten digits
	case KindUCIHAR:
		return data.UCIHARClasses(spec)
	case KindWISDM:
		w, err := data.LoadWISDM(spec, data.SensorOptions{Window: 1, Stride: 1})
		if err != nil {
			return nil, err
		}
		return w.ClassNames(), nil
	}
	if !hasSplit(spec) {
		return data.FolderClasses(spec)
	}
	train, err := data.FolderClasses(filepath.Join(spec, "train"))
	if err != nil {
		return nil, err
	}
	test, err := data.FolderClasses(filepath.Join(spec, "test"))
	if err != nil {
		return nil, err
	}
	return train, sameLabels(spec, train, test)
}

// hasSplit reports whether an image or recording folder holds train/ and test/.
func hasSplit(spec string) bool {
	return dirExists(filepath.Join(spec, "train")) && dirExists(filepath.Join(spec, "test"))
}

// sameLabels refuses a train/test layout whose two halves have different
// classes: label i would mean one class in training and another in testing.
func sameLabels(spec string, train, test []string) error {
	if slices.Equal(train, test) {
		return nil
	}
	return fmt.Errorf("cli: data %s: test/ has other classes than train/: %s", spec, models.DescribeLabelDiff(train, test, "train/"))
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func idxPath(dir, name string) string {
	if p := filepath.Join(dir, name); fileExists(p) {
		return p
	}
	return filepath.Join(dir, name+".gz")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func isIDXDir(dir string) bool {
	return fileExists(idxPath(dir, "train-images-idx3-ubyte"))
}

// ParseClasses reads a class list such as "0-4" or "5,7,9" ("" is none).
func ParseClasses(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cli: class list %q: %q is not a number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cli: class list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// split divides ds into a train and a test part by a seeded shuffle: the
// fraction 1-holdout of the samples (rounded down) goes to train, the rest
// to test. Both parts must get a sample.
func split(ds data.Dataset, holdout float64, seed uint64) (train, test data.Dataset, err error) {
	n := ds.Len()
	cut := int((1 - holdout) * float64(n))
	if cut < 1 || cut >= n {
		return nil, nil, fmt.Errorf("%w: --holdout %v of %d samples leaves %d to train on and %d to test: give a fraction that leaves some of each",
			ErrUsage, holdout, n, cut, n-cut)
	}
	perm := rand.New(rand.NewPCG(seed, 0x5eed)).Perm(n)
	return data.Subset(ds, perm[:cut]), data.Subset(ds, perm[cut:]), nil
}

// ModelMeta returns meta recording what a model trained on d must carry to
// read data as d was read: the class names, the normalisation norm, and for
// sensor data the channel names and stride (models.WithSignals); for text
// the vocabulary alone (models.WithVocab: the words are the classes, and
// ids need no normalisation).
func (d *Data) ModelMeta(meta [][2]string, norm models.Norm) [][2]string {
	if d.Kind == KindText {
		return models.WithVocab(meta, d.Vocab)
	}
	meta = models.WithNorm(models.WithLabels(meta, d.Labels), norm)
	if d.Kind.Signals() {
		meta = models.WithSignals(meta, d.Signals)
	}
	return meta
}
