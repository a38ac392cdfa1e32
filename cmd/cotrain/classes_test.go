package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/models"
)

// colourFolder writes an image folder of n 20×20 PNGs per class, each class
// a dominant colour with noise, and returns the path to one image of each.
func colourFolder(t *testing.T, dir string, classes map[string][3]int, n int) map[string]string {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(len(dir)), 1))
	one := map[string]string{}
	for name, rgb := range classes {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			img := image.NewRGBA(image.Rect(0, 0, 20, 20))
			for p := 0; p < len(img.Pix); p += 4 {
				for c := range 3 {
					img.Pix[p+c] = uint8(min(255, max(0, rgb[c]+int(r.NormFloat64()*25))))
				}
				img.Pix[p+3] = 255
			}
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name, fmt.Sprintf("%02d.png", i))
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			one[name] = path
		}
	}
	return one
}

var fruit = map[string][3]int{"apple": {200, 40, 40}, "grape": {90, 40, 160}, "lime": {80, 200, 60}}

// runErr runs the command and returns its error and stderr.
func runErr(args ...string) (error, string) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return err, errb.String()
}

// TestClassesTravelWithTheModel: an image folder's classes size a model
// trained from scratch and one fine-tuned from an ONNX export (whose head
// of 5 is replaced, and the command says so); the weight files name them
// and record the normalisation, so predict prints names with no flags and
// eval refuses data with other classes, naming the difference.
func TestClassesTravelWithTheModel(t *testing.T) {
	dir := t.TempDir()
	photos := colourFolder(t, filepath.Join(dir, "fruit"), fruit, 12)
	want := []string{"apple", "grape", "lime"}

	// From scratch: mobilenet-small on 32×32 RGB, 3 outputs.
	cotrain(t, "train", "--model", "mobilenet-small", "--data", filepath.Join(dir, "fruit"), "--iterations", "2",
		"--batch", "8", "--normalize", "imagenet", "--json", "--out", filepath.Join(dir, "scratch"), "--device", "cpu")
	f, err := models.LoadFile(filepath.Join(dir, "scratch", "weights.ctw"))
	if err != nil {
		t.Fatal(err)
	}
	names, named, err := f.Labels()
	if err != nil || !named || !slices.Equal(names, want) || f.Config.Classes != 3 {
		t.Errorf("trained file: %d classes named %q (%v, %v); want %q", f.Config.Classes, names, named, err, want)
	}
	if n, set, _ := f.InputNorm(); !set || n.Mean[0] != 0.485 || n.Std[2] != 0.225 {
		t.Errorf("trained file's normalisation %v (recorded %v), want imagenet", n, set)
	}

	// Fine-tuning an ONNX export straight from its .onnx file: the head
	// of 5 does not fit 3 classes and is replaced.
	var out, errb bytes.Buffer
	args := []string{"finetune", "--weights", "../../models/onnx/testdata/inception_lite_op9.onnx", "--data", filepath.Join(dir, "fruit"),
		"--train-last", "all", "--iterations", "60", "--batch", "8", "--lr", "0.05", "--json", "--out", filepath.Join(dir, "ft"), "--device", "cpu"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("finetune: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "last layer (5 outputs) does not fit the data's 3 classes (apple, grape, lime): replaced") {
		t.Errorf("finetune did not say it replaced the head; stderr:\n%s", errb.String())
	}
	weights := filepath.Join(dir, "ft", "weights.ctw")

	// predict: names, in text and JSON, and the right fruit.
	out.Reset()
	if err := run(context.Background(), []string{"predict", "--weights", weights, "--device", "cpu", photos["lime"]}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.HasPrefix(text, photos["lime"]+": lime (") {
		t.Errorf("predict prints %q; want the lime named first", text)
	}
	ev, _ := cotrain(t, "predict", "--weights", weights, "--device", "cpu", "--json", photos["grape"])
	top := ev["top5"].([]any)
	var labels []string
	for _, e := range top {
		m := e.(map[string]any)
		labels = append(labels, m["label"].(string))
		if p := m["prob"].(float64); p < 0 || p > 1 {
			t.Errorf("probability %v", p)
		}
	}
	slices.Sort(labels)
	if len(top) != 3 || top[0].(map[string]any)["label"] != "grape" || !slices.Equal(labels, want) {
		t.Errorf("predict --json top5 %v; want grape first among %q", top, want)
	}

	// eval needs no flags on the same classes, and refuses others.
	done, _ := cotrain(t, "eval", "--weights", weights, "--data", filepath.Join(dir, "fruit"), "--json", "--device", "cpu")
	if acc := done["test_accuracy"].(float64); acc < 0.9 {
		t.Errorf("eval accuracy %.3f on the fine-tuned colours, want >= 0.9", acc)
	}
	colourFolder(t, filepath.Join(dir, "other"), map[string][3]int{"apple": {200, 40, 40}, "lime": {80, 200, 60}, "pear": {200, 200, 60}}, 2)
	err, _ = runErr("eval", "--weights", weights, "--data", filepath.Join(dir, "other"), "--device", "cpu")
	if err == nil || !strings.Contains(err.Error(), "missing classes grape") || !strings.Contains(err.Error(), "extra classes pear") {
		t.Errorf("eval on other classes: %v; want a refusal naming grape and pear", err)
	}
}

// TestImportNormalize: import records --normalize; a wrong one is refused.
func TestImportNormalize(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.ctw")
	done, _ := cotrain(t, "import", "--onnx", "../../models/onnx/testdata/inception_lite_op9.onnx", "--out", out, "--normalize", "0.1,0.2,0.3,1,2,4", "--json")
	if b, _ := json.Marshal(done["std"]); string(b) != "[1,2,4]" {
		t.Errorf("import reports std %s, want [1,2,4]", b)
	}
	f, err := models.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n, set, err := f.InputNorm(); err != nil || !set || !slices.Equal(n.Mean, []float32{0.1, 0.2, 0.3}) {
		t.Errorf("file's normalisation %v (%v, %v)", n, set, err)
	}
	for _, bad := range []string{"imagenet,1", "mnistt", "0.5,0"} {
		if err, _ := runErr("import", "--onnx", "../../models/onnx/testdata/inception_lite_op9.onnx", "--out", out, "--normalize", bad); err == nil ||
			!strings.Contains(err.Error(), "--normalize") {
			t.Errorf("--normalize %q: %v, want a refusal", bad, err)
		}
	}
}

// TestFinetuneNormalize: finetune takes --normalize for an .onnx model, as
// import and the hub do, and the weight file it writes records it; a file
// that already records one refuses another.
func TestFinetuneNormalize(t *testing.T) {
	dir := t.TempDir()
	colourFolder(t, filepath.Join(dir, "fruit"), fruit, 4)
	out := filepath.Join(dir, "ft")
	cotrain(t, "finetune", "--weights", "../../models/onnx/testdata/inception_lite_op9.onnx", "--normalize", "imagenet",
		"--data", filepath.Join(dir, "fruit"), "--iterations", "1", "--batch", "4", "--json", "--out", out, "--device", "cpu")
	weights := filepath.Join(out, "weights.ctw")
	f, err := models.LoadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	imagenet, _ := models.ParseNorm("imagenet", 3)
	if n, set, err := f.InputNorm(); err != nil || !set || !slices.Equal(n.Mean, imagenet.Mean) || !slices.Equal(n.Std, imagenet.Std) {
		t.Errorf("the fine-tuned file's normalisation %v (%v, %v), want imagenet's", n, set, err)
	}
	err, _ = runErr("finetune", "--weights", weights, "--normalize", "unit", "--data", filepath.Join(dir, "fruit"),
		"--iterations", "1", "--out", filepath.Join(dir, "again"), "--device", "cpu")
	if err == nil || !strings.Contains(err.Error(), "already records its input normalisation") {
		t.Errorf("--normalize for a file that records one: %v, want a refusal", err)
	}
}

// TestOldWeightFilePredicts: a weight file from before class names were
// stored predicts with numbered classes.
func TestOldWeightFilePredicts(t *testing.T) {
	ev, _ := cotrain(t, "predict", "--weights", "../../models/testdata/inception_lite_v1_nometa.ctw", "--device", "cpu", "--json",
		"../../models/onnx/testdata/inception_lite_op9.x.npy")
	for _, e := range ev["top5"].([]any) {
		m := e.(map[string]any)
		if m["label"] != fmt.Sprint(m["class"]) {
			t.Errorf("old file: label %v for class %v, want the number", m["label"], m["class"])
		}
	}
}

// TestPredictONNXDirectly: eval and predict take an .onnx file and import
// it as cotrain import does, with the same logits as the imported file.
func TestPredictONNXDirectly(t *testing.T) {
	dir := t.TempDir()
	model := "../../models/onnx/testdata/mobile_blocks.onnx"
	ctw := filepath.Join(dir, "m.ctw")
	cotrain(t, "import", "--onnx", model, "--out", ctw, "--json")
	x := "../../models/onnx/testdata/mobile_blocks.x.npy"
	a, _ := cotrain(t, "predict", "--weights", model, "--device", "cpu", "--json", x)
	b, _ := cotrain(t, "predict", "--weights", ctw, "--device", "cpu", "--json", x)
	if fmt.Sprint(a["logits"]) != fmt.Sprint(b["logits"]) || a["logits"] == nil {
		t.Errorf("predict on the .onnx: %v; on the imported file: %v", a["logits"], b["logits"])
	}
}
