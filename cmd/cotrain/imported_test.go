package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
)

// readFixtureNPY reads one of the ONNX fixtures' .npy tensors.
func readFixtureNPY(t *testing.T, path string) ([]float32, []int) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	x, shape, err := data.ReadNPY(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return x, shape
}

// predictLogits runs predict --json and returns the logits of every sample,
// in order.
func predictLogits(t *testing.T, args ...string) []float32 {
	t.Helper()
	_, out := cotrain(t, append([]string{"predict", "--json"}, args...)...)
	var logits []float32
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p struct {
			Event  string    `json:"event"`
			Logits []float32 `json:"logits"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if p.Event == "prediction" {
			logits = append(logits, p.Logits...)
		}
	}
	return logits
}

// relErr is max|got-want| / max|want| (as in models/onnx's tests): the
// error relative to the output's scale.
func relErr(got, want []float32) float64 {
	var diff, scale float64
	for i := range want {
		diff = max(diff, math.Abs(float64(got[i])-float64(want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	return diff / scale
}

// TestPredictImportedModels imports every ONNX fixture and runs predict on
// its input: the logits are PyTorch's to a relative 1e-4. predict reads the
// imported file like any weight file (models.File.Build).
func TestPredictImportedModels(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fixtures []struct{ Name string }
	if err := json.Unmarshal(raw, &fixtures); err != nil {
		t.Fatal(err)
	}
	if len(fixtures) < 6 {
		t.Fatalf("only %d fixtures", len(fixtures))
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			base := filepath.Join(fixtureDir, fx.Name)
			w := filepath.Join(t.TempDir(), "m.ctw")
			cotrain(t, "import", "--onnx", base+".onnx", "--out", w, "--json")
			want, shape := readFixtureNPY(t, base+".y.npy")
			got := predictLogits(t, "--weights", w, "--input", base+".x.npy", "--device", "cpu")
			if len(got) != len(want) {
				t.Fatalf("%d logits, the fixture has %d (shape %v)", len(got), len(want), shape)
			}
			if e := relErr(got, want); !(e <= 1e-4) {
				t.Errorf("relative error %.3g > 1e-4: got %v, want %v", e, got[:3], want[:3])
			}
		})
	}
}

// TestFinetuneImportedModel fine-tunes an imported LeNet-5 on MNIST: only
// the last layer changes, the new file keeps the graph (so it builds, and
// eval, predict and export take it), and its predictions are its own.
func TestFinetuneImportedModel(t *testing.T) {
	dir := t.TempDir()
	w, ft := filepath.Join(dir, "lenet.ctw"), filepath.Join(dir, "ft")
	base := filepath.Join(fixtureDir, "lenet5_softmax_op9")
	cotrain(t, "import", "--onnx", base+".onnx", "--out", w, "--json")
	done, _ := cotrain(t, "finetune", "--weights", w, "--data", "mnist", "--train-last", "1", "--iterations", "10",
		"--batch", "32", "--device", "cpu", "--json", "--out", ft)
	if done["event"] != "done" || done["iterations"] != float64(10) {
		t.Fatalf("finetune: %v", done)
	}
	tuned := filepath.Join(ft, "weights.ctw")
	before, err := models.LoadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	after, err := models.LoadFile(tuned)
	if err != nil {
		t.Fatal(err)
	}
	if after.Model != models.GraphModel || after.MetaValue(models.MetaGraph) != before.MetaValue(models.MetaGraph) {
		t.Fatalf("fine-tuned file: model %q, graph kept %v", after.Model, after.MetaValue(models.MetaGraph) == before.MetaValue(models.MetaGraph))
	}
	if after.MetaValue("iterations") != "10" || after.MetaValue("onnx.opset") != "9" {
		t.Errorf("meta %v", after.Meta)
	}
	// The last layer with parameters is the last tensors' layer.
	lastLayer := func(name string) string { return name[:strings.LastIndex(name, ".")] }
	last := lastLayer(before.Params[len(before.Params)-1].Name)
	for i, p := range before.Params {
		same := slices.Equal(p.Data, after.Params[i].Data)
		if isLast := lastLayer(p.Name) == last; isLast == same {
			t.Errorf("%s: changed %v, but only %s should change", p.Name, !same, last)
		}
	}
	done, _ = cotrain(t, "eval", "--weights", tuned, "--data", "mnist", "--device", "cpu", "--json")
	if acc, ok := done["test_accuracy"].(float64); !ok || acc < 0.05 || done["model"] != "lenet5_softmax_op9" {
		// An imported model is shown by its file's name (MetaName), not as models.GraphModel.
		t.Errorf("eval of the fine-tuned file: %v", done)
	}
	cotrain(t, "export", "--weights", tuned, "--onnx", filepath.Join(dir, "ft.onnx"), "--json")

	// predict gives the fine-tuned network's own logits.
	net, err := after.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	x, _ := readFixtureNPY(t, base+".x.npy")
	xb := net.B.Alloc(len(x))
	net.B.Upload(xb, x)
	n := len(x) / net.In.Size()
	want := make([]float32, n*net.Out.Size())
	net.B.Download(want, net.Forward(xb, n, false))
	if got := predictLogits(t, "--weights", tuned, "--input", base+".x.npy", "--device", "cpu"); !slices.Equal(got, want) {
		t.Errorf("predict on the fine-tuned file: %v, want %v", got[:3], want[:3])
	}
}

func TestDeviceFlag(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "m.ctw")
	cotrain(t, "import", "--onnx", filepath.Join(fixtureDir, "lenet5_softmax_op9.onnx"), "--out", w, "--json")
	x := filepath.Join(fixtureDir, "lenet5_softmax_op9.x.npy")
	for _, tc := range []struct {
		name   string
		args   []string
		target error // nil: the command succeeds; else a usage error wrapping it
	}{
		{"auto", []string{"predict", "--weights", w, "--input", x, "--device", "auto"}, nil},
		{"cpu", []string{"eval", "--weights", w, "--data", "mnist", "--device", "cpu"}, nil},
		{"bad spec", []string{"predict", "--weights", w, "--input", x, "--device", "tpu"}, gpu.ErrDeviceSpec},
		{"bad index", []string{"train", "--iterations", "1", "--device", "opencl:x"}, gpu.ErrDeviceSpec},
		{"fp16 auto", []string{"predict", "--weights", w, "--input", x, "--device", "auto", "--fp16"}, nil},
		{"fp16 on cpu", []string{"eval", "--weights", w, "--data", "mnist", "--device", "cpu", "--fp16"}, gpu.ErrDeviceSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), tc.args, &out, &errb)
			if tc.target == nil {
				if err != nil {
					t.Fatalf("%v\n%s", err, errb.String())
				}
				return
			}
			if !errors.Is(err, errUsage) || !errors.Is(err, tc.target) || !strings.Contains(err.Error(), "--device") {
				t.Errorf("error %v, want a usage error about --device", err)
			}
		})
	}
	// A weight half cannot hold is refused by name before any device opens.
	f, err := models.LoadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	f.Params[1].Data[2] = 1e5
	big := filepath.Join(dir, "big.ctw")
	if err := models.SaveFile(big, f); err != nil {
		t.Fatal(err)
	}
	var bo, be bytes.Buffer
	if err := run(context.Background(), []string{"eval", "--weights", big, "--fp16"}, &bo, &be); err == nil ||
		!strings.Contains(err.Error(), f.Params[1].Name+"[2] is 100000, beyond half precision's range") {
		t.Errorf("--fp16 with a weight of 1e5: error %v", err)
	}
	// Without -tags opencl (as here) "opencl" is refused with the reason; a
	// build with OpenCL may have a device, so only the refusal is checked.
	var out, errb bytes.Buffer
	err = run(context.Background(), []string{"predict", "--weights", w, "--input", x, "--device", "opencl"}, &out, &errb)
	if err != nil && (!strings.Contains(err.Error(), "opencl") || errors.Is(err, errUsage)) {
		t.Errorf("--device opencl: %v", err)
	}
}

// TestProfileImportedModel: `cotrain profile --weights` times the
// fine-tuning step of an imported graph with --train-last, its batch
// uploaded every step or resident, and reports what trains.
func TestProfileImportedModel(t *testing.T) {
	model := filepath.Join(fixtureDir, "mobile_blocks.onnx")
	all, _ := cotrain(t, "profile", "--weights", model, "--train-last", "all", "--batch", "4", "--steps", "2", "--json")
	last, _ := cotrain(t, "profile", "--weights", model, "--train-last", "1", "--batch", "4", "--steps", "2", "--resident", "--json")
	for _, d := range []map[string]any{all, last} {
		if d["event"] != "done" || d["model"] != "mobile_blocks" || !(d["samples_per_s"].(float64) > 0) || !(d["cpu_step_s"].(float64) > 0) {
			t.Fatalf("profile: %v", d)
		}
	}
	if all["trainable"] != all["params"] || !(last["trainable"].(float64) < last["params"].(float64)) || last["params"] != all["params"] {
		t.Errorf("trainable: %v of %v with all, %v of %v with 1", all["trainable"], all["params"], last["trainable"], last["params"])
	}
	if !(last["kept_activations_mib"].(float64) < all["kept_activations_mib"].(float64)) {
		t.Errorf("kept activations: %v MiB with train-last 1, %v MiB with all", last["kept_activations_mib"], all["kept_activations_mib"])
	}
}

// TestProfileKernelProfileRefusals: --kernel-profile takes kernels or
// layers, and only on a backend that times its kernels (OpenCL).
func TestProfileKernelProfileRefusals(t *testing.T) {
	model := filepath.Join(fixtureDir, "mobile_blocks.onnx")
	for _, v := range []string{"shapes", "layers"} {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{"profile", "--device", "cpu", "--weights", model, "--batch", "2", "--steps", "1",
			"--kernel-profile", v}, &out, &errb)
		if !errors.Is(err, errUsage) {
			t.Errorf("--kernel-profile %s on the CPU: %v, want a usage error", v, err)
		}
	}
}
