package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/data"
)

// TestFinetuneWalkthrough runs docs/finetune.md: its Python blocks (with
// PyTorch 1.13) and its commands, in order, in one folder. It changes only
// what a test cannot do: the pretrained weights are random (batch-norm
// parameters and statistics drawn at random, as a trained model's are, so
// that PyTorch's exporter does not merge equal tensors), the input is 64×64
// instead of 224×224, the run is shorter, and the workers get --hub on
// loopback instead of mDNS. It checks that the hub replaces the head and
// names the classes, that a phone with an extra class is refused, that all
// nodes end with the same weights, that predict names the classes, and that
// the weights loaded back into PyTorch give cotrain's logits to 1e-4. It
// does not check the accuracy: the features of a randomly initialised
// MobileNet v2 do not separate the colours, and the head stays at chance
// (the fine-tuning tests of pretrained-like models are
// TestFinetuneONNXOnThreeWorkerProcesses and cotrain's).
func TestFinetuneWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PyTorch, a hub and four workers; skipped with -short")
	}
	python := torchPython(t)
	doc, err := os.ReadFile("../../docs/finetune.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := fenced(string(doc), "python")
	cmds := fenced(string(doc), "sh")
	if len(blocks) != 2 || len(cmds) != 7 {
		t.Fatalf("docs/finetune.md has %d python blocks and %d commands, the test knows 2 and 7: update it", len(blocks), len(cmds))
	}
	// 0. The three commands, built as the walkthrough builds them.
	binDir := buildAsDocumented(t, cmds[0])
	cmds = cmds[1:]
	// What the walkthrough shows the hub and the refused phone print.
	shown := regexp.MustCompile("(?s)It prints the classes.*?```\n(hub: .*?)\nclasses: .*?; (\\d+) of (\\d+) parameters train\n```.*?```\n(worker: the hub refused: .*?)\n```").FindStringSubmatch(string(doc))
	if shown == nil {
		t.Fatal("docs/finetune.md no longer shows what the hub and a refused worker print: update the test")
	}
	replaced, trainable, params, refused := shown[1], shown[2], shown[3], shown[4]
	hubBin, workerBin := filepath.Join(binDir, "hub"), filepath.Join(binDir, "worker")
	bins := map[string]string{"hub": hubBin, "worker": workerBin, "cotrain": filepath.Join(binDir, "cotrain")}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// 1. Export.
	export := blocks[0]
	for _, r := range [][2]string{{`weights="IMAGENET1K_V1"`, `weights=None`}, {"224, 224", "64, 64"}, {"model.eval()\n", "model.eval()\n" + randomBN}} {
		if !strings.Contains(export, r[0]) {
			t.Fatalf("the export block no longer has %q", r[0])
		}
		export = strings.Replace(export, r[0], r[1], 1)
	}
	runPython(t, python, dir, export)

	// The photos: three classes of colours, for the hub and three phones,
	// and a fourth phone with a class more.
	rgb := map[string][3]float64{"cat": {200, 40, 40}, "dog": {90, 40, 160}, "rabbit": {80, 200, 60}, "hamster": {200, 200, 60}}
	classes := []string{"cat", "dog", "rabbit"}
	writeImages(t, filepath.Join(dir, "hub-photos", "train"), classes, rgb, 2, 50)
	writeImages(t, filepath.Join(dir, "hub-photos", "test"), classes, rgb, 10, 51)
	for i := range 3 {
		writeImages(t, filepath.Join(dir, fmt.Sprint("phone", i), "photos"), classes, rgb, 8, uint64(60+i))
	}
	writeImages(t, filepath.Join(dir, "phone-extra", "photos"), append(classes, "hamster"), rgb, 2, 70)
	photo, err := os.ReadFile(filepath.Join(dir, "hub-photos", "test", "dog", "001.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "photo.jpg"), photo, 0o644); err != nil {
		t.Fatal(err)
	}

	// 2. Import.
	runDoc(t, bins, dir, cmds[0])

	// 4. The hub, shorter, on loopback.
	hubArgs := docArgs(t, cmds[1], "hub", map[string]string{"--iterations": "20", "--batch": "24"})
	h := startIn(t, ctx, dir, "hub", hubBin, append(hubArgs, "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json", "--log-every", "5")...)
	listening := h.until(t, "listening", time.Minute)
	if got := fmt.Sprint(listening["classes"]); got != "[cat dog rabbit]" {
		t.Errorf("hub's classes %s", got)
	}
	// The documented counts are torchvision's MobileNet v2 with a 3-class
	// head and --train-last 2; the input size does not change them.
	if got := fmt.Sprintf("%.0f of %.0f", listening["trainable"], listening["params"]); got != trainable+" of "+params {
		t.Errorf("hub: %s parameters train, the walkthrough says %s of %s", got, trainable, params)
	}
	addr := listening["addrs"].([]any)[0].(string)

	// 5. The workers: one per phone folder, and the phone with a hamster.
	workerArgs := docArgs(t, cmds[2], "worker", nil)
	loop := []string{"--hub", addr, "--listen", "/ip4/127.0.0.1/tcp/0", "--json"}
	extra := exec.CommandContext(ctx, workerBin, append(append(workerArgs, loop...), "--reconnect-timeout", "0")...)
	extra.Dir = filepath.Join(dir, "phone-extra")
	msg, err := extra.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), refused) {
		t.Errorf("the phone with a hamster folder: %v, %s; want the walkthrough's %q", err, msg, refused)
	}
	t.Logf("refused phone says: %s", lastLine(string(msg)))
	var ws []*proc
	for i := range 3 {
		ws = append(ws, startIn(t, ctx, filepath.Join(dir, fmt.Sprint("phone", i)), fmt.Sprint("phone ", i), workerBin, append(workerArgs, loop...)...))
	}
	done := h.until(t, "done", 3*time.Minute)
	sameWeights(t, done, ws...)
	if code := h.exit(t, 30*time.Second); code != 0 {
		t.Errorf("hub exited %d", code)
	}
	if !strings.Contains(h.stderr.String(), replaced) {
		t.Errorf("the hub did not print the walkthrough's %q; its stderr:\n%s", replaced, tail(h.stderr.String(), 2000))
	}
	t.Logf("hub done: test accuracy %v after %v iterations", done["test_accuracy"], done["iterations"])

	// 6. eval, predict, export; then back into PyTorch.
	runDoc(t, bins, dir, cmds[3])
	out := runDoc(t, bins, dir, cmds[4])
	// As the walkthrough shows: "photo.jpg: dog (0.912), cat (0.071), rabbit (0.017)".
	if !regexp.MustCompile(`^photo\.jpg: (cat|dog|rabbit) \(\d\.\d{3}\), (cat|dog|rabbit) \(\d\.\d{3}\), (cat|dog|rabbit) \(\d\.\d{3}\)\n$`).MatchString(out) ||
		!strings.Contains(out, "cat (") || !strings.Contains(out, "dog (") || !strings.Contains(out, "rabbit (") {
		t.Errorf("predict printed %q, want the three classes named as the walkthrough shows", out)
	}
	runDoc(t, bins, dir, cmds[5])
	x := make([]float32, 2*3*64*64)
	r := rand.New(rand.NewPCG(9, 9))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	writeNPY(t, filepath.Join(dir, "x.npy"), x, 2, 3, 64, 64)
	back := blocks[1] + `
import numpy as np
with torch.no_grad():
    y = model(torch.from_numpy(np.load("x.npy"))).numpy()
np.save("torch_logits.npy", y.astype("<f4"))
`
	runPython(t, python, dir, back)
	torchLogits := readNPYFloats(t, filepath.Join(dir, "torch_logits.npy"))
	preds := predictions(t, filepath.Join(dir, "result", "weights.ctw"), filepath.Join(dir, "x.npy"))
	var worst float64
	for i, p := range preds {
		for j, v := range p["logits"].([]any) {
			w := float64(torchLogits[i*3+j])
			worst = math.Max(worst, math.Abs(v.(float64)-w)/math.Max(1, math.Abs(w)))
		}
	}
	t.Logf("PyTorch with the fine-tuned weights against cotrain: largest logit difference %.2g", worst)
	if len(preds) != 2 || len(torchLogits) != 6 || worst > 1e-4 {
		t.Errorf("%d predictions, %d PyTorch logits, largest difference %.2g; want 2, 6, <= 1e-4", len(preds), len(torchLogits), worst)
	}
}

// buildAsDocumented runs the walkthrough's build line (go build -o bin/
// ...) from the repository's root, into a temporary folder instead of
// bin/, and returns that folder.
func buildAsDocumented(t *testing.T, line string) string {
	t.Helper()
	dir := t.TempDir()
	args := docArgs(t, line, "go", map[string]string{"-o": dir + "/"})
	for _, b := range []string{"./cmd/hub", "./cmd/worker", "./cmd/cotrain"} {
		if !slices.Contains(args, b) {
			t.Fatalf("the walkthrough's build line %q does not build %s", line, b)
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return dir
}

// TestFinetuneWalkthroughSharedTensors runs step 6's way back into PyTorch
// on a model whose batch norm still holds its defaults (weights 1, biases
// 0, means 0, variances 1): PyTorch's exporter then shares equal tensors
// between layers, cotrain names the later readers' copies anew, and a
// plain copy by name would stop with a KeyError. The walkthrough's loop
// pairs them; the PyTorch model must give cotrain's logits to 1e-4. The
// model is fine-tuned for a step on one device (cotrain finetune) so that
// its head has the walkthrough's three classes.
func TestFinetuneWalkthroughSharedTensors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PyTorch; skipped with -short")
	}
	python := torchPython(t)
	doc, err := os.ReadFile("../../docs/finetune.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := fenced(string(doc), "python")
	if len(blocks) != 2 {
		t.Fatalf("docs/finetune.md has %d python blocks, the test knows 2", len(blocks))
	}
	cotrainPath, err := cotrainBin()
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{"cotrain": cotrainPath}
	dir := t.TempDir()
	export := blocks[0]
	for _, r := range [][2]string{{`weights="IMAGENET1K_V1"`, `weights=None`}, {"224, 224", "64, 64"}} {
		if !strings.Contains(export, r[0]) {
			t.Fatalf("the export block no longer has %q", r[0])
		}
		export = strings.Replace(export, r[0], r[1], 1)
	}
	runPython(t, python, dir, export)
	rgb := map[string][3]float64{"cat": {200, 40, 40}, "dog": {90, 40, 160}, "rabbit": {80, 200, 60}}
	writeImages(t, filepath.Join(dir, "photos"), []string{"cat", "dog", "rabbit"}, rgb, 2, 80)
	runDoc(t, bins, dir, "cotrain import --onnx mymodel.onnx --normalize imagenet --out mymodel.ctw")
	runDoc(t, bins, dir, "cotrain finetune --weights mymodel.ctw --data photos --iterations 1 --batch 4 --out result")
	runDoc(t, bins, dir, "cotrain export --weights result/weights.ctw --onnx finetuned.onnx")
	f, err := os.ReadFile(filepath.Join(dir, "finetuned.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(f, []byte("_2.weight")) {
		t.Fatal("no tensor of finetuned.onnx was renamed (…_2.weight): PyTorch shared none, and this test checks nothing")
	}
	x := make([]float32, 2*3*64*64)
	r := rand.New(rand.NewPCG(10, 10))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	writeNPY(t, filepath.Join(dir, "x.npy"), x, 2, 3, 64, 64)
	runPython(t, python, dir, blocks[1]+`
import numpy as np
with torch.no_grad():
    y = model(torch.from_numpy(np.load("x.npy"))).numpy()
np.save("torch_logits.npy", y.astype("<f4"))
`)
	torchLogits := readNPYFloats(t, filepath.Join(dir, "torch_logits.npy"))
	preds := predictions(t, filepath.Join(dir, "result", "weights.ctw"), filepath.Join(dir, "x.npy"))
	var worst float64
	for i, p := range preds {
		for j, v := range p["logits"].([]any) {
			w := float64(torchLogits[i*3+j])
			worst = math.Max(worst, math.Abs(v.(float64)-w)/math.Max(1, math.Abs(w)))
		}
	}
	t.Logf("shared tensors: largest logit difference %.2g", worst)
	if len(preds) != 2 || len(torchLogits) != 6 || worst > 1e-4 {
		t.Errorf("%d predictions, %d PyTorch logits, largest difference %.2g; want 2, 6, <= 1e-4", len(preds), len(torchLogits), worst)
	}
}

// randomBN gives batch norm the parameters and statistics of a trained
// model (random, all different).
const randomBN = `torch.manual_seed(0)
for m in model.modules():
    if isinstance(m, torch.nn.BatchNorm2d):
        with torch.no_grad():
            m.weight.uniform_(0.5, 1.5); m.bias.uniform_(-0.2, 0.2)
            m.running_mean.uniform_(-0.2, 0.2); m.running_var.uniform_(0.5, 1.5)
`

// torchPython returns a Python with torch, torchvision and onnx, or skips.
func torchPython(t *testing.T) string {
	p := findTorchPython()
	if p == "" {
		t.Skip("no python3 with torch, torchvision and onnx (apt: python3-torch python3-torchvision python3-onnx)")
	}
	return p
}

// findTorchPython returns a Python with torch, torchvision and onnx, or "".
func findTorchPython() string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import torch, torchvision, onnx").Run() == nil {
			return p
		}
	}
	return ""
}

func runPython(t *testing.T, python, dir, code string) {
	t.Helper()
	cmd := exec.Command(python, "-c", code)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s\n--- code:\n%s", err, out, code)
	}
}

// fenced returns the fenced blocks of a language in a markdown text; for
// "sh", each line of each block separately.
func fenced(doc, lang string) []string {
	var out []string
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(doc, -1) {
		if lang != "sh" {
			out = append(out, m[1])
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			out = append(out, l)
		}
	}
	return out
}

// docArgs splits a documented command line of bin into its arguments,
// replacing the values of the flags in set (which it must have).
func docArgs(t *testing.T, line, bin string, set map[string]string) []string {
	t.Helper()
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != bin {
		t.Fatalf("documented command %q is not %s's", line, bin)
	}
	args := f[1:]
	for flag, v := range set {
		i := 0
		for i < len(args) && args[i] != flag {
			i++
		}
		if i+1 >= len(args) {
			t.Fatalf("documented command %q has no %s", line, flag)
		}
		args[i+1] = v
	}
	return args
}

// runDoc runs a documented command line as written, in dir, and returns
// its stdout.
func runDoc(t *testing.T, bins map[string]string, dir, line string) string {
	t.Helper()
	f := strings.Fields(line)
	bin, ok := bins[f[0]]
	if !ok {
		t.Fatalf("documented command %q: unknown program", line)
	}
	cmd := exec.Command(bin, f[1:]...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, stderr.String())
	}
	t.Logf("%s\n%s", line, strings.TrimSpace(stdout.String()))
	return stdout.String()
}

// startIn is start with the process's working folder set.
func startIn(t *testing.T, ctx context.Context, dir, name, bin string, args ...string) *proc {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "in-dir.sh")
	script := "#!/bin/sh\ncd \"$1\" && shift && exec \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return start(t, ctx, name, wrapper, append([]string{dir, bin}, args...)...)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// readNPYFloats reads a float32 .npy file's values.
func readNPYFloats(t *testing.T, path string) []float32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, _, err := data.ReadNPY(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
