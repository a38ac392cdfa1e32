package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
)

// The fine-tuning end to end test (issue 16, "what it must show"): an ONNX
// model exported from PyTorch is fine-tuned by a hub and three worker
// processes on loopback, each worker with a photo folder of its own whose
// class folders hold its share of the images; then predict names the
// classes and the result, exported back to ONNX, gives cotrain's logits.

// finetuneModel is the PyTorch export the test fine-tunes: a network of
// modern mobile blocks (hard-swish, squeeze-excitation with sigmoid and
// hard-sigmoid gates, a ShuffleNet-style unit with a concat of branches and
// a channel shuffle, batch norm kept; scripts/onnx_acts.py), 3×32×32
// inputs, 5 outputs, so the hub replaces its head with one for the data's 3
// classes.
const finetuneModel = "../../models/onnx/testdata/mobile_blocks.onnx"

// fineClasses are the synthetic classes: each is a colour that dominates
// its images (with noise and a random gradient), so that a small network
// separates them within a few dozen iterations.
var fineClasses = []struct {
	name string
	rgb  [3]float64
}{{"apple", [3]float64{200, 40, 40}}, {"grape", [3]float64{90, 40, 160}}, {"lime", [3]float64{80, 200, 60}}}

// writeImages writes n images of each class into dir/<class>/, 20×20
// (resized to the model's input when loaded), every other one a JPEG.
func writeImages(t *testing.T, dir string, classes []string, rgb map[string][3]float64, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	for _, c := range classes {
		if err := os.MkdirAll(filepath.Join(dir, c), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			img := image.NewRGBA(image.Rect(0, 0, 20, 20))
			gx, gy := r.Float64()*2-1, r.Float64()*2-1
			for y := range 20 {
				for x := range 20 {
					var px [3]uint8
					for ch := range 3 {
						v := rgb[c][ch] + 30*(gx*float64(x-10)+gy*float64(y-10))/10 + r.NormFloat64()*25
						px[ch] = uint8(math.Max(0, math.Min(255, v)))
					}
					img.Set(x, y, color.RGBA{px[0], px[1], px[2], 255})
				}
			}
			var buf bytes.Buffer
			name := fmt.Sprintf("%03d.png", i)
			if i%2 == 1 {
				name = fmt.Sprintf("%03d.jpg", i)
				if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
					t.Fatal(err)
				}
			} else if err := png.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, c, name), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// cotrainBin builds the cotrain command once.
var cotrainBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "cotrain-cli")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "cotrain")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/cotrain/cotrain/cmd/cotrain").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build cotrain: %v\n%s", err, out)
	}
	return bin, nil
})

// cotrain runs the cotrain command and returns its stdout.
func cotrain(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := cotrainBin()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cotrain %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// writeNPY writes float32 values of shape dims as a .npy file.
func writeNPY(t *testing.T, path string, v []float32, dims ...int) {
	t.Helper()
	var buf bytes.Buffer
	if err := data.WriteNPY(&buf, v, dims); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// predictions runs cotrain predict --json and returns its events.
func predictions(t *testing.T, weights string, inputs ...string) []map[string]any {
	t.Helper()
	out := cotrain(t, append([]string{"predict", "--json", "--device", "cpu", "--weights", weights}, inputs...)...)
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("predict printed %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestFinetuneONNXOnThreeWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a hub, four workers and the cotrain command; skipped with -short")
	}
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	rgb := map[string][3]float64{"pear": {200, 200, 60}}
	var names []string
	for _, c := range fineClasses {
		names = append(names, c.name)
		rgb[c.name] = c.rgb
	}
	// The hub's evaluation data, and each worker's own photos.
	writeImages(t, filepath.Join(dir, "hub", "train"), names, rgb, 4, 100)
	writeImages(t, filepath.Join(dir, "hub", "test"), names, rgb, 20, 101)
	for i := range 3 {
		writeImages(t, filepath.Join(dir, fmt.Sprint("photos", i)), names, rgb, 12, uint64(i))
	}
	writeImages(t, filepath.Join(dir, "photos-extra"), append([]string{"pear"}, names...), rgb, 2, 9)

	h := start(t, ctx, "hub", hubBin, "--weights", finetuneModel, "--normalize", "imagenet", "--train-last", "all",
		"--data", filepath.Join(dir, "hub"), "--min-workers", "3", "--batch", "36", "--iterations", "40",
		"--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json", "--log-every", "10", "--out", filepath.Join(dir, "hub-out"))
	listening := h.until(t, "listening", 30*time.Second)
	if got := fmt.Sprint(listening["classes"]); got != "[apple grape lime]" {
		t.Errorf("hub's classes %s, want [apple grape lime]", got)
	}
	addr := listening["addrs"].([]any)[0].(string)

	// A worker whose folder has a class the model does not know is refused
	// at registration, and told which.
	extra := start(t, ctx, "worker extra", workerBin, "--hub", addr, "--data", filepath.Join(dir, "photos-extra"),
		"--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(dir, "w-extra"), "--reconnect-timeout", "0")
	select {
	case err := <-extra.done:
		if err == nil {
			t.Errorf("the worker with an extra class exited without error")
		}
	case <-ctx.Done():
		t.Fatal("the worker with an extra class was not refused")
	}
	if msg := extra.stderr.String(); !strings.Contains(msg, "extra classes pear") {
		t.Errorf("the refused worker says %q; want it to name the extra class pear", msg)
	}

	var ws []*proc
	for i := range 3 {
		ws = append(ws, start(t, ctx, fmt.Sprintf("worker %d", i), workerBin, "--hub", addr,
			"--data", filepath.Join(dir, fmt.Sprint("photos", i)), "--listen", "/ip4/127.0.0.1/tcp/0", "--json",
			"--out", filepath.Join(dir, fmt.Sprint("w", i))))
	}
	done := h.until(t, "done", 2*time.Minute)
	for _, w := range ws {
		wd := w.until(t, "done", time.Minute)
		if wd["weights_sha256"] != done["weights_sha256"] {
			t.Errorf("%s: weights_sha256 %v, the hub's %v", w.name, wd["weights_sha256"], done["weights_sha256"])
		}
	}
	if err := <-h.done; err != nil {
		t.Errorf("hub exited: %v", err)
	}
	if refused := done["refused"].(float64); refused < 1 {
		t.Errorf("the hub counts %v refusals, want the extra-class worker's", refused)
	}
	acc := done["test_accuracy"].(float64)
	t.Logf("fine-tuned %s on 3 workers: test accuracy %.4f after %v iterations", filepath.Base(finetuneModel), acc, done["iterations"])
	if acc < 0.9 {
		t.Errorf("test accuracy %.4f, want >= 0.9 on these colour classes", acc)
	}

	// predict needs no flags: the file names the classes and knows its
	// normalisation.
	weights := done["weights"].(string)
	for _, c := range names {
		img := filepath.Join(dir, "hub", "test", c, "000.png")
		ev := predictions(t, weights, img)[0]
		top := ev["top5"].([]any)
		if len(top) != 3 {
			t.Fatalf("predict %s: %d classes in top5, want 3", img, len(top))
		}
		if got := top[0].(map[string]any)["label"]; got != c {
			t.Errorf("predict %s: top class %v, want %s (%v)", img, got, c, top)
		}
	}

	// Exported back to ONNX, the model gives cotrain's logits: the ONNX
	// file imported again (as PyTorch would run it) and the fine-tuned
	// weight file, on the same inputs.
	x := make([]float32, 4*3*32*32)
	r := rand.New(rand.NewPCG(5, 5))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	npy := filepath.Join(dir, "x.npy")
	writeNPY(t, npy, x, 4, 3, 32, 32)
	onnxOut := filepath.Join(dir, "finetuned.onnx")
	cotrain(t, "export", "--weights", weights, "--onnx", onnxOut)
	again := filepath.Join(dir, "again.ctw")
	// No --normalize: the ONNX file's metadata carries it, and the classes.
	cotrain(t, "import", "--onnx", onnxOut, "--out", again)
	for _, c := range names {
		img := filepath.Join(dir, "hub", "test", c, "000.png")
		a, b := predictions(t, weights, img)[0]["top5"], predictions(t, again, img)[0]["top5"]
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: imported again, predict says %v; the fine-tuned file %v", img, b, a)
		}
	}
	want, got := predictions(t, weights, npy), predictions(t, again, npy)
	if len(want) != 4 || len(got) != 4 {
		t.Fatalf("%d and %d predictions, want 4", len(want), len(got))
	}
	var worst float64
	for i := range want {
		a, b := want[i]["logits"].([]any), got[i]["logits"].([]any)
		for j := range a {
			d := math.Abs(a[j].(float64) - b[j].(float64))
			worst = math.Max(worst, d/math.Max(1, math.Abs(a[j].(float64))))
		}
	}
	t.Logf("exported ONNX imported again against cotrain: largest logit difference %.2g", worst)
	if worst > 1e-4 {
		t.Errorf("exported ONNX logits differ from cotrain's by %.2g (relative), want <= 1e-4", worst)
	}

	// And in PyTorch: the model's own class (scripts/onnx_acts.py) with a
	// 3-class head, its weights loaded by name from the exported ONNX.
	python := findTorchPython()
	if python == "" {
		t.Log("no python3 with torch and onnx: the PyTorch comparison is skipped")
		return
	}
	runPython(t, python, dir, fmt.Sprintf(`
import sys
sys.path.insert(0, %q)
import numpy as np, onnx, torch
from onnx import numpy_helper
from onnx_acts import MobileBlocks
model = MobileBlocks(classes=3)
weights = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in onnx.load("finetuned.onnx").graph.initializer}
state = model.state_dict()
for name in state:
    if not name.endswith("num_batches_tracked"):
        state[name] = weights[name]
model.load_state_dict(state)
model.eval()
with torch.no_grad():
    np.save("torch_logits.npy", model(torch.from_numpy(np.load("x.npy"))).numpy().astype("<f4"))
`, mustAbs(t, "../../scripts")))
	torchLogits := readNPYFloats(t, filepath.Join(dir, "torch_logits.npy"))
	worst = 0
	for i := range want {
		for j, v := range want[i]["logits"].([]any) {
			w := float64(torchLogits[i*3+j])
			worst = math.Max(worst, math.Abs(v.(float64)-w)/math.Max(1, math.Abs(w)))
		}
	}
	t.Logf("PyTorch with the exported weights against cotrain: largest logit difference %.2g", worst)
	if len(torchLogits) != 12 || worst > 1e-4 {
		t.Errorf("%d PyTorch logits, largest difference from cotrain's %.2g; want 12, <= 1e-4", len(torchLogits), worst)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestFinetuneHubKilledAndResumed: a fine-tuning session (an ONNX model,
// its head replaced, the last two layers training) checkpoints and resumes
// like any other. The hub is SIGKILLed mid-run and restarted with --resume
// on the same address: it continues from its last checkpoint, the workers
// reconnect, and every node ends with the hub's weights after the planned
// iterations.
func TestFinetuneHubKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("process test; skipped with -short")
	}
	hubBin, _ := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	rgb := map[string][3]float64{}
	var names []string
	for _, c := range fineClasses {
		names = append(names, c.name)
		rgb[c.name] = c.rgb
	}
	writeImages(t, filepath.Join(dir, "hub"), names, rgb, 6, 100)
	for i := range 2 {
		writeImages(t, filepath.Join(dir, fmt.Sprint("photos", i)), names, rgb, 8, uint64(i))
	}
	const iters = 60
	listen, out := freeListen(t), filepath.Join(dir, "hub-out")
	args := []string{"--weights", finetuneModel, "--normalize", "imagenet", "--train-last", "2",
		"--data", filepath.Join(dir, "hub"), "--min-workers", "2", "--batch", "16", "--iterations", fmt.Sprint(iters),
		"--checkpoint-every", "10", "--policy", "fixed", "--listen", listen, "--mdns=false", "--json", "--out", out,
		"--log-every", "1", "--tick", "20ms", "--deadline", "2s"}
	h := start(t, ctx, "hub", hubBin, args...)
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	var ws []*proc
	for i := range 2 {
		ws = append(ws, faultWorker(t, ctx, fmt.Sprint("w", i), addr, dir, 0, 1, "--data", filepath.Join(dir, fmt.Sprint("photos", i))))
	}
	killedAt := h.progressTo(t, 25, nil, time.Minute)["iteration"].(float64)
	h.cmd.Process.Signal(syscall.SIGKILL)
	for ev := range h.events {
		if ev["event"] == "progress" {
			killedAt = max(killedAt, ev["iteration"].(float64))
		}
	}
	h.exit(t, 10*time.Second)

	h2 := start(t, ctx, "resumed hub", hubBin, append(args, "--resume")...)
	resumed := h2.until(t, "resumed", 30*time.Second)["iteration"].(float64)
	if want := math.Floor(killedAt/10) * 10; resumed != want || resumed == 0 {
		t.Errorf("resumed at iteration %v, want the last checkpoint before %v (%v)", resumed, killedAt, want)
	}
	done := h2.until(t, "done", 2*time.Minute)
	if done["iterations"].(float64) != iters {
		t.Errorf("resumed run ended after %v iterations, want %d", done["iterations"], iters)
	}
	sameWeights(t, done, ws...)
	t.Logf("killed at %v, resumed at %v: test accuracy %.4f", killedAt, resumed, done["test_accuracy"])
}

// TestFlagsFinetune: --weights and --model exclude each other, --train-last
// needs --weights and a number or all, all usage errors before any work; a
// bad --normalize is refused naming the flag before the data is read.
func TestFlagsFinetune(t *testing.T) {
	for _, args := range [][]string{
		{"--weights", "m.onnx", "--model", "lenet5"},
		{"--train-last", "2"},
		{"--weights", "m.onnx", "--train-last", "two"},
		{"--weights", "m.onnx", "--train-last", "0"},
	} {
		if _, err := parseFlags(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	c, err := parseFlags([]string{"--weights", finetuneModel, "--normalize", "imagenet,1", "--data", "no-such-folder"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadModel(c, cpu.NewCPU(), io.Discard); err == nil || !strings.Contains(err.Error(), "--normalize") {
		t.Errorf("--normalize imagenet,1: %v", err)
	}
}

// TestResumeRefusesOtherClasses: a checkpoint written for some classes is
// not resumed with data of others, even of the same count.
func TestResumeRefusesOtherClasses(t *testing.T) {
	dir := t.TempDir()
	tr := lenetTrainer(t, "adam", 1, 1)
	abc := models.WithLabels(nil, models.NumberedLabels(10))
	if _, err := saveCheckpoint(dir, "lenet5", models.Config{}, abc, tr, 10); err != nil {
		t.Fatal(err)
	}
	if err := checkClasses(dir, abc); err != nil {
		t.Errorf("same classes: %v", err)
	}
	other := models.NumberedLabels(10)
	other[9] = "nine"
	if err := checkClasses(dir, models.WithLabels(nil, other)); err == nil || !strings.Contains(err.Error(), "nine") {
		t.Errorf("other classes: %v, want a refusal naming them", err)
	}
}
