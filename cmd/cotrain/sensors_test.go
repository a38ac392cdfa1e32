package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
)

// genAccel writes GenerateAccel's recordings: recs of secs seconds per
// activity, from seed.
func genAccel(t *testing.T, recs int, secs float64, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	if err := data.GenerateAccel(dir, data.AccelOptions{Recordings: recs, Seconds: secs, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recordingEvents runs predict --json on recordings and returns their
// "recording" events.
func recordingEvents(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	_, out := cotrain(t, append([]string{"predict", "--json", "--device", "cpu"}, args...)...)
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e["event"] == "recording" {
			evs = append(evs, e)
		}
	}
	return evs
}

// har-cnn end to end on recording folders: train on one folder, the file
// records the channels, stride and the recordings' normalisation; eval on
// recordings of another seed reports accuracy; predict names each
// recording's activity from its windows; a --window the model does not take
// is refused, naming both.
func TestSensorsTrainEvalPredict(t *testing.T) {
	train, test := genAccel(t, 12, 20, 1), genAccel(t, 1, 30, 2)
	out := filepath.Join(t.TempDir(), "har")
	done, _ := cotrain(t, "train", "--model", "har-cnn", "--data", train, "--epochs", "5", "--batch", "32", "--lr", "0.05",
		"--device", "cpu", "--json", "--out", out)
	if acc, _ := done["test_accuracy"].(float64); acc < 0.8 {
		t.Errorf("held-out accuracy %v after 5 epochs, want at least 0.8: %v", acc, done)
	}
	if !strings.Contains(done["split"].(string), "5 of 60 recordings") {
		t.Errorf("split %q: want whole recordings held out (one of each activity's twelve)", done["split"])
	}
	f, err := models.LoadFile(filepath.Join(out, "weights.ctw"))
	if err != nil {
		t.Fatal(err)
	}
	sig, ok, err := models.SignalsOf(f.Meta, 3)
	if err != nil || !ok || !slices.Equal(sig.Channels, []string{"x", "y", "z"}) || sig.Stride != data.DefaultStride {
		t.Errorf("recorded signals %+v, %v, %v", sig, ok, err)
	}
	norm, set, err := f.InputNorm()
	if err != nil || !set || !(norm.Mean[2] != 0.5 && norm.Std[0] != 0.5) {
		t.Errorf("recorded normalisation %v (set %v, %v), want the recordings' own", norm, set, err)
	}
	if in := f.Resolved().Input; in.C != 3 || in.H != 1 || in.W != data.DefaultWindow {
		t.Errorf("input %v, want 3×1×%d", in, data.DefaultWindow)
	}
	w := filepath.Join(out, "weights.ctw")
	ev, _ := cotrain(t, "eval", "--weights", w, "--data", test, "--device", "cpu", "--json")
	t.Logf("held-out recordings of the training seed: accuracy %v (%v); recordings of another seed: %v", done["test_accuracy"], done["split"], ev["test_accuracy"])
	if acc, _ := ev["test_accuracy"].(float64); acc < 0.6 {
		t.Errorf("accuracy on recordings of another seed %v, want at least 0.6: %v", acc, ev)
	}
	var inputs []string
	for _, a := range data.AccelActivities() {
		inputs = append(inputs, filepath.Join(test, a, "rec-000.csv"))
	}
	evs := recordingEvents(t, append([]string{"--weights", w}, inputs...)...)
	right := 0
	for i, e := range evs {
		// 30 s at 50 Hz: (1500-128)/64+1 windows.
		if e["windows"] != float64(22) || e["aggregate"] == nil {
			t.Errorf("%s: %v", inputs[i], e)
		}
		if e["activity"] == data.AccelActivities()[i] {
			right++
		}
	}
	if len(evs) != len(inputs) || right < 4 {
		t.Errorf("%d recordings named, %d of them right: %v", len(evs), right, evs)
	}
	var errb strings.Builder
	err = run(t.Context(), []string{"eval", "--weights", w, "--data", test, "--window", "64", "--device", "cpu"}, &strings.Builder{}, &errb)
	if err == nil || !strings.Contains(err.Error(), "--window 64") || !strings.Contains(err.Error(), fmt.Sprint(data.DefaultWindow, " steps")) {
		t.Errorf("eval --window 64: %v", err)
	}
	// An image model on recordings is refused in plain words.
	err = run(t.Context(), []string{"train", "--model", "lenet5", "--data", test, "--iterations", "1", "--device", "cpu"}, &strings.Builder{}, &errb)
	if err == nil || !strings.Contains(err.Error(), "sensor recordings") {
		t.Errorf("lenet5 on recordings: %v", err)
	}
	// Its rate counts windows, not images.
	var outb strings.Builder
	err = run(t.Context(), []string{"train", "--model", "har-cnn", "--data", test, "--iterations", "1", "--device", "cpu",
		"--out", filepath.Join(t.TempDir(), "rate")}, &outb, &errb)
	if err != nil || !strings.Contains(outb.String(), " window/s)") {
		t.Errorf("har-cnn on recordings, one step: %v; output %q, want the rate in window/s", err, outb.String())
	}
}

// UCI HAR's layout through the CLI: har-cnn trains on the fixture's
// windows (total_acc x, y, z), and eval and predict read it.
func TestSensorsUCIHAR(t *testing.T) {
	uci := "../../data/testdata/uci-har"
	out := filepath.Join(t.TempDir(), "uci")
	done, _ := cotrain(t, "train", "--model", "har-cnn", "--data", uci, "--iterations", "3", "--batch", "4", "--holdout", "0.25",
		"--device", "cpu", "--json", "--out", out)
	if done["test_samples"] != float64(1) {
		t.Errorf("train on UCI HAR's 4 windows: %v", done)
	}
	f, err := models.LoadFile(filepath.Join(out, "weights.ctw"))
	if err != nil {
		t.Fatal(err)
	}
	sig, ok, _ := models.SignalsOf(f.Meta, 3)
	labels, _, _ := f.Labels()
	if !ok || !slices.Equal(sig.Channels, data.UCIHARSignals()[:3]) || len(labels) != 6 || labels[0] != "WALKING" {
		t.Errorf("signals %+v, labels %v", sig, labels)
	}
	ev, _ := cotrain(t, "eval", "--weights", filepath.Join(out, "weights.ctw"), "--data", uci, "--device", "cpu", "--json")
	if ev["samples"] != float64(4) {
		t.Errorf("eval on UCI HAR: %v", ev)
	}
}

// The PyTorch 1-D CNN fixture (Conv1d, BatchNorm1d, MaxPool1d, AvgPool1d,
// AdaptiveAvgPool1d, Linear; 3×64 windows, 4 classes) fine-tuned with
// --train-last all on recordings: its head is replaced for the 5
// activities, every layer trains, and the held-out loss falls from one step
// to 60.
func TestFinetune1DONNX(t *testing.T) {
	finetune1DONNX(t, "cpu")
}

func finetune1DONNX(t *testing.T, device string) {
	train := genAccel(t, 8, 20, 1)
	model := filepath.Join(fixtureDir, "conv1d", "cnn1d_op13.onnx")
	loss := map[string]float64{}
	for _, it := range []string{"1", "60"} {
		out := filepath.Join(t.TempDir(), it)
		done, _ := cotrain(t, "finetune", "--weights", model, "--data", train, "--train-last", "all", "--iterations", it,
			"--batch", "32", "--lr", "0.05", "--schedule", "constant", "--device", device, "--json", "--out", out)
		loss[it], _ = done["test_loss"].(float64)
		if it == "60" {
			f, err := models.LoadFile(filepath.Join(out, "weights.ctw"))
			if err != nil {
				t.Fatal(err)
			}
			if in := f.Resolved().Input; in.C != 3 || in.H != 1 || in.W != 64 {
				t.Errorf("input %v, want the model's 3×1×64", in)
			}
			if _, set, _ := f.InputNorm(); !set {
				t.Error("the fine-tuned file records no normalisation")
			}
		}
	}
	if !(loss["60"] < loss["1"]*0.7) {
		t.Errorf("%s: held-out loss %.4f after 60 steps, %.4f after 1: want it to fall", device, loss["60"], loss["1"])
	}
	t.Logf("%s: held-out loss %.4f after 1 step, %.4f after 60", device, loss["1"], loss["60"])
}
