package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// This file checks a model against data before any work depends on the
// pair, and says in plain words what does not fit and what to do: a model
// of the wrong input on MNIST, a model whose outputs are not the data's
// classes, a folder with a broken image.

// mnistShape is the shape of MNIST and of the IDX files LoadData reads.
var mnistShape = solver.Shape{C: 1, H: 28, W: 28}

// CheckFit refuses data whose samples the model cannot take, before any are
// loaded. MNIST and IDX files hold 28×28 grayscale digits of a fixed shape;
// an image folder is resized and converted to any input of 1 (grayscale) or
// 3 (RGB) channels; sensor recordings are windows of C channels × L steps,
// which only a model of input C×1×L takes (the channels and window are
// checked when the recordings are read).
func CheckFit(spec string, in solver.Shape) error {
	kind, err := KindOf(spec)
	if err != nil {
		return err
	}
	return checkFit(kind, spec, in)
}

func checkFit(kind DataKind, spec string, in solver.Shape) error {
	switch {
	case kind.Signals():
		if in.H != 1 {
			return fmt.Errorf("%w: the model takes %s, but --data %s holds sensor recordings (windows of channels × time steps): "+
				"train or evaluate a model of sensor windows (har-cnn, or an imported 1-D CNN)", ErrUsage, describeInput(in), spec)
		}
		return nil
	case in.H == 1 && in.W > 1:
		return fmt.Errorf("%w: the model takes windows of %d channels × %d steps (sensor recordings), but --data %s holds images: "+
			"give a folder of recordings (one subfolder per activity holding CSV files), UCI HAR's folder or a WISDM file", ErrUsage, in.C, in.W, spec)
	case kind == KindMNIST || kind == KindIDX:
		if in == mnistShape {
			return nil
		}
		return fmt.Errorf("%w: the model takes %s, but --data %s holds 28×28 grayscale digits (1 channel): "+
			"train or evaluate a model built for them (lenet5, lenet-caffe), or give an image folder, whose images are resized and converted to the model's input",
			ErrUsage, describeInput(in), spec)
	}
	if in.C != 1 && in.C != 3 {
		return fmt.Errorf("%w: the model takes %s; an image folder gives 1 channel (grayscale) or 3 (RGB): use data of the model's kind (a .npy tensor with cotrain predict)",
			ErrUsage, describeInput(in))
	}
	return nil
}

// describeInput names an input shape for a person: "3-channel (RGB)
// 224×224 images".
func describeInput(in solver.Shape) string {
	if in.H == 1 && in.W > 1 {
		return fmt.Sprintf("windows of %d channels × %d steps", in.C, in.W)
	}
	kind := fmt.Sprintf("%d-channel", in.C)
	switch in.C {
	case 1:
		kind = "1-channel (grayscale)"
	case 3:
		kind = "3-channel (RGB)"
	}
	return fmt.Sprintf("%s %d×%d images", kind, in.H, in.W)
}

// CheckClasses refuses to evaluate a model on data whose classes are not
// its outputs, and says what to do. A model that names its classes must see
// the same names in the same order. One that names none (an imported ONNX
// model, a file from before names were stored) must have exactly one output
// per class of the data: label i is then compared with output i, which
// means nothing when, say, a 1000-class ImageNet model meets a 3-class
// folder.
func CheckClasses(f *models.File, labels []string, spec string) error {
	names, named, err := f.Labels()
	if err != nil {
		return err
	}
	if !named {
		if len(labels) == len(names) {
			return nil
		}
		return fmt.Errorf("%w: the model has %d outputs and names no classes; --data %s has %d classes: "+
			"its label i would be compared with the model's output i. Fine-tune the model on this data first "+
			"(cotrain finetune --weights MODEL --data %s replaces its last layer with one of %d outputs and records the class names)",
			ErrUsage, len(names), spec, len(labels), spec, len(labels))
	}
	if slices.Equal(names, labels) {
		return nil
	}
	return fmt.Errorf("%w: --data %s has other classes than the model: %s. Evaluate on data with the model's classes, "+
		"or fine-tune the model on this data first (cotrain finetune replaces its last layer)",
		ErrUsage, spec, models.DescribeLabelDiff(names, labels, "the model"))
}

// CheckData reads and decodes the whole of a --data value without knowing
// the model: what a worker does before it registers, so that a broken file
// stops it, with the file named, before the run counts on it. An image
// folder is decoded image by image (data.CheckImageFolder); with progress
// not nil, a folder of more than progressOver images gets a progress line
// on it, redrawn in place; maxPixels is --max-pixels (0: the default). MNIST
// and IDX files, sensor recordings (checkSignals) and text are read whole.
func CheckData(spec string, maxPixels int, progress io.Writer) error {
	kind, err := KindOf(spec)
	if err != nil {
		return err
	}
	switch kind {
	case KindText:
		// Every file read and checked (UTF-8, sizes); the vocabulary comes
		// with the model.
		_, err := data.LoadText(spec, data.TextOptions{Context: 1})
		return err
	case KindMNIST:
		for _, part := range []string{"train", "test"} {
			if _, err := data.LoadMNIST(part, os.Getenv); err != nil {
				return err
			}
		}
		return nil
	case KindIDX:
		_, err := data.LoadIDX(idxPath(spec, "train-images-idx3-ubyte"), idxPath(spec, "train-labels-idx1-ubyte"))
		return err
	case KindSensors, KindUCIHAR, KindWISDM:
		return checkSignals(spec, kind)
	}
	dirs := []string{spec}
	if hasSplit(spec) {
		dirs = []string{filepath.Join(spec, "train"), filepath.Join(spec, "test")}
	}
	for _, dir := range dirs {
		var bar *Progress
		report := func(done, total int) {
			if progress == nil || total <= progressOver {
				return
			}
			if bar == nil {
				bar = NewProgress(progress, "checking "+dir, total, "img")
			}
			bar.Add(1, "")
		}
		_, err := data.CheckImageFolder(dir, maxPixels, report)
		bar.Done()
		if err != nil {
			return fmt.Errorf("cli: --data %s: %w: fix or remove the file", spec, err)
		}
	}
	return nil
}

// progressOver is the folder size above which CheckData draws a progress
// line: decoding a few hundred photos takes seconds on a phone.
const progressOver = 200
