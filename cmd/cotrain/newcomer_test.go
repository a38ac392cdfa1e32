package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/models"
)

// These tests run the real command (this test binary runs cotrain's main
// when asCLI is set: TestMain), its flag parsing and exit codes included,
// on what tripped a newcomer (issue 31).

// cliRun runs cotrain with args and returns stdout, stderr and the exit
// code.
func cliRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCLI+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("cotrain %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// mustRun is cliRun that fails the test unless the command exits 0.
func mustRun(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	out, errs, code := cliRun(t, args...)
	if code != 0 {
		t.Fatalf("cotrain %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out, errs
}

// A split is made only for training, and then said: train prints and stores
// --holdout's split; eval and the hub use all of a folder.
func TestHoldoutIsExplicitAndEvalUsesTheWholeFolder(t *testing.T) {
	dir := t.TempDir()
	photos := filepath.Join(dir, "fruit")
	colourFolder(t, photos, fruit, 12) // 36 images
	out := filepath.Join(dir, "run")
	_, errs := mustRun(t, "train", "--model", "lenet5", "--data", photos, "--iterations", "5", "--batch", "8", "--holdout", "0.25", "--out", out)
	if want := "data " + photos + ": 27 of 36 images to train, 9 held out to test (--holdout 0.25)"; !strings.Contains(errs, want) {
		t.Errorf("train stderr:\n%s\nwant %q", errs, want)
	}
	f, err := models.LoadFile(filepath.Join(out, "weights.ctw"))
	if err != nil {
		t.Fatal(err)
	}
	if f.MetaValue("holdout") != "0.25" || f.MetaValue("test_samples") != "9" || !strings.Contains(f.MetaValue("split"), "9 held out") {
		t.Errorf("weight file meta: holdout %q test_samples %q split %q", f.MetaValue("holdout"), f.MetaValue("test_samples"), f.MetaValue("split"))
	}
	stdout, _ := mustRun(t, "eval", "--weights", filepath.Join(out, "weights.ctw"), "--data", photos)
	if !strings.Contains(stdout, "over 36 test samples (all 36 images)") {
		t.Errorf("eval on the folder: %q; want all 36 images", stdout)
	}
}

// Flags may follow positional arguments: predict's --json after the image
// is the flag, not a file.
func TestPredictFlagsAfterTheImage(t *testing.T) {
	dir := t.TempDir()
	photos := colourFolder(t, filepath.Join(dir, "fruit"), fruit, 6)
	out := filepath.Join(dir, "run")
	mustRun(t, "train", "--model", "lenet5", "--data", filepath.Join(dir, "fruit"), "--iterations", "2", "--batch", "6", "--out", out)
	stdout, _ := mustRun(t, "predict", "--weights", filepath.Join(out, "weights.ctw"), photos["lime"], "--json", "--top", "2")
	var p map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &p); err != nil {
		t.Fatalf("predict ... --json: %q is not one JSON line: %v", stdout, err)
	}
	if p["input"] != photos["lime"] || len(p["top5"].([]any)) != 2 {
		t.Errorf("prediction %v", p)
	}
}

// finetune on a small folder trains a useful number of steps by default,
// and --train-last beyond the model's layers is refused.
func TestFinetuneSmallFolder(t *testing.T) {
	dir := t.TempDir()
	photos := filepath.Join(dir, "fruit")
	colourFolder(t, photos, fruit, 6) // 18 images: 16 to train
	base := filepath.Join(dir, "base")
	mustRun(t, "train", "--model", "lenet5", "--data", photos, "--iterations", "2", "--batch", "4", "--out", base)
	w := filepath.Join(base, "weights.ctw")
	_, errs, code := cliRun(t, "finetune", "--weights", w, "--data", photos, "--train-last", "500", "--out", filepath.Join(dir, "x"))
	if code != 2 || !strings.Contains(errs, "--train-last 500: the model has 5 layers with parameters; give at most 5, or all") {
		t.Errorf("--train-last 500: exit %d\n%s", code, errs)
	}
	_, errs = mustRun(t, "finetune", "--weights", w, "--data", photos, "--out", filepath.Join(dir, "ft"), "--checkpoint-every", "0")
	if !strings.Contains(errs, "16 training and 2 test samples, 100 steps of 16") {
		t.Errorf("finetune's default length on 16 images:\n%s\nwant 100 steps of 16", errs)
	}
}

// cotrain models names --width; train takes it for a model that has one
// and refuses it for one that has not.
func TestTrainWidth(t *testing.T) {
	list, _ := mustRun(t, "models")
	if !strings.Contains(list, "--width") {
		t.Fatalf("cotrain models no longer mentions --width:\n%s", list)
	}
	dir := t.TempDir()
	photos := filepath.Join(dir, "fruit")
	colourFolder(t, photos, fruit, 2)
	out := filepath.Join(dir, "m")
	mustRun(t, "train", "--model", "mobilenet-small", "--width", "0.25", "--data", photos, "--iterations", "1", "--batch", "2", "--out", out)
	f, err := models.LoadFile(filepath.Join(out, "weights.ctw"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Config.Width != 0.25 {
		t.Errorf("weight file width %v, want 0.25", f.Config.Width)
	}
	_, errs, code := cliRun(t, "train", "--model", "lenet5", "--width", "0.5", "--data", photos, "--iterations", "1", "--out", filepath.Join(dir, "l"))
	if code != 2 || !strings.Contains(errs, "model lenet5 has no width multiplier") {
		t.Errorf("lenet5 --width 0.5: exit %d\n%s", code, errs)
	}
}

// A model that does not fit the data is refused in plain words, with what
// to do: an RGB model on MNIST, a model of 10 unnamed outputs on a folder
// of 3 classes. An imported model shows by its file's name.
func TestEvalMismatchesExplained(t *testing.T) {
	dir := t.TempDir()
	photos := filepath.Join(dir, "fruit")
	colourFolder(t, photos, fruit, 2)
	rgb := filepath.Join(dir, "rgb")
	mustRun(t, "train", "--model", "mobilenet-small", "--width", "0.25", "--data", photos, "--iterations", "1", "--batch", "2", "--out", rgb)
	_, errs, code := cliRun(t, "eval", "--weights", filepath.Join(rgb, "weights.ctw"), "--data", "mnist")
	if code != 2 || !strings.Contains(errs, "the model takes 3-channel (RGB) 32×32 images, but --data mnist holds 28×28 grayscale digits") {
		t.Errorf("RGB model on mnist: exit %d\n%s", code, errs)
	}

	// lenet5 with 10 outputs and no class names (as a file from before
	// names were stored, or an ImageNet export, has none).
	tenOut := filepath.Join(dir, "ten")
	mustRun(t, "train", "--model", "lenet5", "--data", photos, "--iterations", "1", "--batch", "2", "--out", tenOut)
	f, err := models.LoadFile(filepath.Join(tenOut, "weights.ctw"))
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := models.Retarget(&models.File{Model: f.Model, Config: f.Config, Params: f.Params, State: f.State}, models.NumberedLabels(10), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	g.Meta = nil // no class names
	unnamed := filepath.Join(dir, "unnamed.ctw")
	if err := models.SaveFile(unnamed, g); err != nil {
		t.Fatal(err)
	}
	_, errs, code = cliRun(t, "eval", "--weights", unnamed, "--data", photos)
	if code != 2 || !strings.Contains(errs, "the model has 10 outputs and names no classes; --data "+photos+" has 3 classes") {
		t.Errorf("10 unnamed outputs on 3 classes: exit %d\n%s", code, errs)
	}

	onnx := filepath.Join(dir, "fruitnet.onnx")
	mustRun(t, "export", "--weights", filepath.Join(tenOut, "weights.ctw"), "--onnx", onnx)
	stdout, _ := mustRun(t, "eval", "--weights", onnx, "--data", photos)
	if !strings.HasPrefix(stdout, "fruitnet on ") {
		t.Errorf("eval of an imported model: %q; want it named fruitnet, not %s", stdout, models.GraphModel)
	}
}
