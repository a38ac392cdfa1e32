package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/solver"
)

// Data is a training set and a test set of one input shape.
type Data struct {
	Train, Test data.Dataset
	Name        string
}

// LoadData resolves a --data value:
//   - "mnist": real MNIST, found in the Go module cache;
//   - a folder with MNIST-named IDX files (train-images-idx3-ubyte[.gz], ...);
//   - an image folder (one subfolder per class), or one with train/ and test/
//     subfolders of that layout; images are resized to input. A single folder
//     is split 90/10 into train and test by a seeded shuffle.
//
// classes, when not empty, keeps only those labels (their numbers unchanged).
func LoadData(spec string, input solver.Shape, classes []int, seed uint64) (*Data, error) {
	var d Data
	d.Name = spec
	switch {
	case spec == "mnist":
		train, err := data.LoadMNIST("train")
		if err != nil {
			return nil, err
		}
		test, err := data.LoadMNIST("test")
		if err != nil {
			return nil, err
		}
		d.Train, d.Test = train, test
	case isIDXDir(spec):
		train, err := data.LoadIDX(idxPath(spec, "train-images-idx3-ubyte"), idxPath(spec, "train-labels-idx1-ubyte"))
		if err != nil {
			return nil, err
		}
		test, err := data.LoadIDX(idxPath(spec, "t10k-images-idx3-ubyte"), idxPath(spec, "t10k-labels-idx1-ubyte"))
		if err != nil {
			return nil, err
		}
		d.Train, d.Test = train, test
	default:
		st, err := os.Stat(spec)
		if err != nil {
			return nil, fmt.Errorf("cli: --data %q is neither \"mnist\" nor a folder: %w", spec, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("cli: --data %q is a file; want \"mnist\" or a folder", spec)
		}
		opt := data.FolderOptions{C: input.C, H: input.H, W: input.W}
		if input.C == 1 {
			opt.Mean, opt.Std = []float32{0.1307}, []float32{0.3081}
		}
		if dirExists(filepath.Join(spec, "train")) && dirExists(filepath.Join(spec, "test")) {
			if d.Train, err = data.LoadImageFolder(filepath.Join(spec, "train"), opt); err != nil {
				return nil, err
			}
			if d.Test, err = data.LoadImageFolder(filepath.Join(spec, "test"), opt); err != nil {
				return nil, err
			}
		} else {
			all, err := data.LoadImageFolder(spec, opt)
			if err != nil {
				return nil, err
			}
			d.Train, d.Test = split(all, 0.9, seed)
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

// split divides ds into a train and a test part by a seeded shuffle; frac of
// the samples go to train.
func split(ds data.Dataset, frac float64, seed uint64) (train, test data.Dataset) {
	perm := rand.New(rand.NewPCG(seed, 0x5eed)).Perm(ds.Len())
	cut := int(frac * float64(ds.Len()))
	return data.Subset(ds, perm[:cut]), data.Subset(ds, perm[cut:])
}
