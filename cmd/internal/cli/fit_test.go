package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// photoFolder writes n small PNGs into each class folder of a new temp dir.
func photoFolder(t *testing.T, classes []string, n int) string {
	t.Helper()
	dir := t.TempDir()
	for ci, c := range classes {
		if err := os.MkdirAll(filepath.Join(dir, c), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			img := image.NewGray(image.Rect(0, 0, 6, 6))
			img.SetGray(i%6, ci%6, color.Gray{Y: 200})
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, c, fmt.Sprintf("%02d.png", i)), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// Flags may follow positional arguments; "--" ends the flags.
func TestParseArgsInterleaved(t *testing.T) {
	for _, tc := range []struct {
		args []string
		json bool
		out  string
		pos  []string
	}{
		{[]string{"a.jpg", "--json"}, true, "", []string{"a.jpg"}},
		{[]string{"--out", "x", "a.jpg", "b.jpg", "--json"}, true, "x", []string{"a.jpg", "b.jpg"}},
		{[]string{"a.jpg", "--out", "y", "b.jpg"}, false, "y", []string{"a.jpg", "b.jpg"}},
		{[]string{"a.jpg", "--", "--json"}, false, "", []string{"a.jpg", "--json"}},
		{[]string{"--json"}, true, "", nil},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		js := fs.Bool("json", false, "")
		out := fs.String("out", "", "")
		if err := ParseArgs(fs, tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if *js != tc.json || *out != tc.out || !slices.Equal(fs.Args(), tc.pos) {
			t.Errorf("%q: json %v out %q args %q; want %v %q %q", tc.args, *js, *out, fs.Args(), tc.json, tc.out, tc.pos)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	if err := ParseArgs(fs, []string{"a.jpg", "--nope"}); err == nil {
		t.Error("an unknown flag after a positional argument: no error")
	}
}

// --help starts with the usage line and a sentence.
func TestSetUsage(t *testing.T) {
	var buf bytes.Buffer
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Bool("json", false, "print JSON")
	SetUsage(fs, &buf, "t [--json] FILE", "Does a thing to FILE.")
	if err := fs.Parse([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if lines[0] != "Usage: t [--json] FILE" || lines[2] != "Does a thing to FILE." || lines[4] != "Flags:" {
		t.Errorf("help:\n%s", buf.String())
	}
}

// A single folder is split only when asked: holdout 0 uses all of it (the
// hub's and eval's case, and a worker's), a fraction holds that much out,
// and the split is described.
func TestLoadDataHoldout(t *testing.T) {
	dir := photoFolder(t, []string{"ant", "bee", "cat"}, 12)
	in := solver.Shape{C: 1, H: 8, W: 8}
	all, err := LoadData(dir, DataOptions{Input: in, Norm: models.DefaultNorm(1), Holdout: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if all.Train.Len() != 36 || all.Test.Len() != 36 || all.Split != "all 36 images" || all.Holdout != 0 {
		t.Errorf("holdout 0: train %d test %d split %q holdout %v; want all 36 in both", all.Train.Len(), all.Test.Len(), all.Split, all.Holdout)
	}
	part, err := LoadData(dir, DataOptions{Input: in, Norm: models.DefaultNorm(1), Holdout: 0.25, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := "27 of 36 images to train, 9 held out to test (--holdout 0.25)"
	if part.Train.Len() != 27 || part.Test.Len() != 9 || part.Split != want || part.Holdout != 0.25 {
		t.Errorf("holdout 0.25: train %d test %d split %q; want 27, 9, %q", part.Train.Len(), part.Test.Len(), part.Split, want)
	}
	for _, h := range []float64{-0.1, 1, 0.999} {
		if _, err := LoadData(dir, DataOptions{Input: in, Norm: models.DefaultNorm(1), Holdout: h, Seed: 1}); !errors.Is(err, ErrUsage) {
			t.Errorf("holdout %v: %v; want a usage error", h, err)
		}
	}
}

// MNIST for a model of another input is refused in plain words, before any
// cryptic normalisation error; an image folder fits any 1- or 3-channel
// input.
func TestCheckFit(t *testing.T) {
	rgb := solver.Shape{C: 3, H: 32, W: 32}
	err := CheckFit("mnist", rgb)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "the model takes 3-channel (RGB) 32×32 images, but --data mnist holds 28×28 grayscale digits") {
		t.Errorf("RGB model on MNIST: %v", err)
	}
	if _, err := LoadData("mnist", DataOptions{Input: rgb, Norm: models.DefaultNorm(3), Holdout: 0, Seed: 1}); err == nil || strings.Contains(err.Error(), "means") {
		t.Errorf("LoadData of MNIST for an RGB model: %v; want CheckFit's words", err)
	}
	if err := CheckFit("mnist", mnistShape); err != nil {
		t.Error(err)
	}
	if err := CheckFit(t.TempDir(), rgb); err != nil {
		t.Errorf("an image folder for an RGB model: %v", err)
	}
	if err := CheckFit(t.TempDir(), solver.Shape{C: 4, H: 8, W: 8}); err == nil {
		t.Error("a 4-channel model on an image folder: no error")
	}
}

// A model's outputs must be the data's classes: a model without names must
// have one output per class, one with names the same names.
func TestCheckClasses(t *testing.T) {
	unnamed := &models.File{Model: "lenet5", Config: models.Config{Classes: 10}}
	err := CheckClasses(unnamed, []string{"a", "b", "c"}, "photos")
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "the model has 10 outputs and names no classes; --data photos has 3 classes") ||
		!strings.Contains(err.Error(), "cotrain finetune --weights MODEL --data photos") {
		t.Errorf("10 unnamed outputs, 3 classes: %v", err)
	}
	if err := CheckClasses(unnamed, models.NumberedLabels(10), "mnist"); err != nil {
		t.Errorf("10 unnamed outputs, 10 classes: %v", err)
	}
	named := &models.File{Model: "lenet5", Config: models.Config{Classes: 2}, Meta: models.WithLabels(nil, []string{"cat", "dog"})}
	err = CheckClasses(named, []string{"cat", "cow"}, "farm")
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "extra classes cow") || !strings.Contains(err.Error(), "fine-tune") {
		t.Errorf("other names: %v", err)
	}
	if err := CheckClasses(named, []string{"cat", "dog"}, "pets"); err != nil {
		t.Error(err)
	}
}

// --train-last above the model's layers with parameters is refused, not
// read as all.
func TestTrainLastTooMany(t *testing.T) {
	net, err := models.Build(cpu.NewCPU(), "lenet5", models.Config{Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	err = TrainLast(net, "500")
	if err == nil || !strings.Contains(err.Error(), "--train-last 500: the model has 5 layers with parameters; give at most 5, or all") {
		t.Errorf("TrainLast 500 on lenet5: %v", err)
	}
	if err := TrainLast(net, "5"); err != nil {
		t.Error(err)
	}
}

// CheckData decodes every image and names the broken one.
func TestCheckDataNamesTheBrokenFile(t *testing.T) {
	dir := photoFolder(t, []string{"ant", "bee"}, 3)
	if err := CheckData(dir, 0, nil); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bee", "01.png")
	b, _ := os.ReadFile(bad)
	if err := os.WriteFile(bad, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	err := CheckData(dir, 0, nil)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "fix or remove the file") {
		t.Errorf("CheckData with a truncated PNG: %v; want %s named", err, bad)
	}
}

// A folder of more than progressOver images gets a progress line.
func TestCheckDataProgress(t *testing.T) {
	dir := photoFolder(t, []string{"a"}, progressOver+1)
	var buf bytes.Buffer
	if err := CheckData(dir, 0, &buf); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("100%% %d/%d", progressOver+1, progressOver+1); !strings.Contains(buf.String(), "checking "+dir) || !strings.Contains(buf.String(), want) {
		t.Errorf("progress %q; want checking %s ... %s", buf.String(), dir, want)
	}
	buf.Reset()
	if err := CheckData(photoFolder(t, []string{"a"}, 3), 0, &buf); err != nil || buf.Len() != 0 {
		t.Errorf("3 images: %v, progress %q; want none", err, buf.String())
	}
}
