package cli

import (
	"fmt"
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

// Data is a training set and a test set of one input shape.
type Data struct {
	Train, Test data.Dataset
	Name        string
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
}

// LoadData resolves a --data value:
//   - "mnist": real MNIST, found in the Go module cache;
//   - a folder with MNIST-named IDX files (train-images-idx3-ubyte[.gz], ...);
//   - an image folder (one subfolder per class), or one with train/ and test/
//     subfolders of that layout (with the same classes); images are resized
//     to input. A single folder is split only when holdout is above 0: that
//     fraction of it, drawn by a shuffle seeded with seed, is Test and the
//     rest Train. With holdout 0 the whole folder is both Train and Test:
//     what evaluation (the hub's --data, cotrain eval) and a worker's
//     training want.
//
// Every sample is normalised with norm, the model's (models.InputNorm).
// classes, when not empty, keeps only those labels (their numbers unchanged).
// maxPixels caps an image's width × height, read from its header before it
// is decoded (data.FolderOptions.MaxPixels; 0 is data.DefaultMaxPixels).
// Data whose fixed shape the model cannot take (MNIST for an RGB model) is
// refused in plain words first (CheckFit).
func LoadData(spec string, input solver.Shape, norm models.Norm, classes []int, holdout float64, seed uint64, maxPixels int) (*Data, error) {
	if err := CheckFit(spec, input); err != nil {
		return nil, err
	}
	if !(holdout >= 0 && holdout < 1) {
		return nil, fmt.Errorf("%w: --holdout %v: want a fraction from 0 (none) up to, not including, 1", ErrUsage, holdout)
	}
	if err := norm.Check(input.C); err != nil {
		return nil, fmt.Errorf("cli: data %s: %w", spec, err)
	}
	var d Data
	d.Name = spec
	switch {
	case spec == "mnist":
		train, err := data.LoadMNIST("train", os.Getenv)
		if err != nil {
			return nil, err
		}
		test, err := data.LoadMNIST("test", os.Getenv)
		if err != nil {
			return nil, err
		}
		if d.Train, err = train.WithNorm(norm.Mean, norm.Std); err != nil {
			return nil, err
		}
		if d.Test, err = test.WithNorm(norm.Mean, norm.Std); err != nil {
			return nil, err
		}
		d.Labels = train.ClassNames()
		d.Split = fmt.Sprintf("MNIST's %d training and %d test images", train.Len(), test.Len())
	case isIDXDir(spec):
		train, err := data.LoadIDX(idxPath(spec, "train-images-idx3-ubyte"), idxPath(spec, "train-labels-idx1-ubyte"))
		if err != nil {
			return nil, err
		}
		test, err := data.LoadIDX(idxPath(spec, "t10k-images-idx3-ubyte"), idxPath(spec, "t10k-labels-idx1-ubyte"))
		if err != nil {
			return nil, err
		}
		if d.Train, err = train.WithNorm(norm.Mean, norm.Std); err != nil {
			return nil, err
		}
		if d.Test, err = test.WithNorm(norm.Mean, norm.Std); err != nil {
			return nil, err
		}
		d.Labels = train.ClassNames()
		d.Split = fmt.Sprintf("the IDX files' %d training and %d test images", train.Len(), test.Len())
	default:
		st, err := os.Stat(spec)
		if err != nil {
			return nil, fmt.Errorf("cli: --data %q is neither \"mnist\" nor a folder: %w", spec, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("cli: --data %q is a file; want \"mnist\" or a folder", spec)
		}
		opt := data.FolderOptions{C: input.C, H: input.H, W: input.W, Mean: norm.Mean, Std: norm.Std, MaxPixels: maxPixels}
		if hasSplit(spec) {
			train, err := data.LoadImageFolder(filepath.Join(spec, "train"), opt)
			if err != nil {
				return nil, err
			}
			test, err := data.LoadImageFolder(filepath.Join(spec, "test"), opt)
			if err != nil {
				return nil, err
			}
			if err := sameLabels(spec, train.ClassNames(), test.ClassNames()); err != nil {
				return nil, err
			}
			d.Train, d.Test, d.Labels = train, test, train.ClassNames()
			d.Split = fmt.Sprintf("train/ (%d images) and test/ (%d images)", train.Len(), test.Len())
		} else {
			all, err := data.LoadImageFolder(spec, opt)
			if err != nil {
				return nil, err
			}
			d.Labels = all.ClassNames()
			if holdout == 0 {
				d.Train, d.Test = all, all
				d.Split = fmt.Sprintf("all %d images", all.Len())
			} else {
				if d.Train, d.Test, err = split(all, holdout, seed); err != nil {
					return nil, fmt.Errorf("cli: data %s: %w", spec, err)
				}
				d.Holdout = holdout
				d.Split = fmt.Sprintf("%d of %d images to train, %d held out to test (--holdout %v)",
					d.Train.Len(), all.Len(), d.Test.Len(), holdout)
			}
		}
	}
	if len(classes) > 0 {
		seen := map[int]bool{}
		for _, c := range classes {
			if c < 0 || c >= d.Train.Classes() || seen[c] {
				return nil, fmt.Errorf("cli: class %d: data %s has classes 0-%d (each given once)", c, spec, d.Train.Classes()-1)
			}
			seen[c] = true
		}
		d.Train = data.FilterClasses(d.Train, classes, false)
		d.Test = data.FilterClasses(d.Test, classes, false)
	}
	c, h, w := d.Train.Shape()
	if (solver.Shape{C: c, H: h, W: w}) != input {
		return nil, fmt.Errorf("cli: data %s has samples of %dx%dx%d, the model takes %v", spec, c, h, w, input)
	}
	return &d, nil
}

// MaxPixelsUsage is the help of the --max-pixels flag of the commands that
// read images.
const MaxPixelsUsage = "the largest image read, in pixels (width × height, checked from the file's header before decoding it); larger images are refused"

// DataLabels returns the class names of a --data value without loading its
// samples: what LoadData's Labels will be. A worker sends them when it
// registers, before it knows the model, and loads the samples after (a
// broken file shows then, as a broken image in a folder does).
func DataLabels(spec string) ([]string, error) {
	if spec == "mnist" || isIDXDir(spec) {
		return models.NumberedLabels(10), nil // data.LoadIDX's ten digits
	}
	st, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("cli: --data %q is neither \"mnist\" nor a folder: %w", spec, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("cli: --data %q is a file; want \"mnist\" or a folder", spec)
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

// hasSplit reports whether an image folder holds train/ and test/.
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
		return nil, nil, fmt.Errorf("%w: --holdout %v of %d images leaves %d to train on and %d to test: give a fraction that leaves some of each",
			ErrUsage, holdout, n, cut, n-cut)
	}
	perm := rand.New(rand.NewPCG(seed, 0x5eed)).Perm(n)
	return data.Subset(ds, perm[:cut]), data.Subset(ds, perm[cut:]), nil
}
