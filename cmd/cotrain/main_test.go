package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
)

// cotrain runs the command in-process and returns its JSON lines' last
// object ("done") and the whole stdout.
func cotrain(t *testing.T, args ...string) (map[string]any, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("cotrain %s: %v\nstderr: %s", strings.Join(args, " "), err, errb.String())
	}
	var last map[string]any
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("cotrain %s: stdout line %q is not JSON: %v", args[0], sc.Text(), err)
		}
		last = obj
	}
	return last, out.String()
}

func TestTrainIsDeterministicAndFinetuneTouchesOnlyTheLastLayer(t *testing.T) {
	dir := t.TempDir()
	a, b, ft := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "ft")
	short := []string{"--model", "lenet5", "--data", "mnist", "--classes", "0-4", "--iterations", "40", "--seed", "7", "--json"}
	doneA, _ := cotrain(t, append([]string{"train", "--out", a}, short...)...)
	doneB, _ := cotrain(t, append([]string{"train", "--out", b}, short...)...)
	if doneA["event"] != "done" || doneA["weights_sha256"] == "" {
		t.Fatalf("done event: %v", doneA)
	}
	if doneA["weights_sha256"] != doneB["weights_sha256"] {
		t.Errorf("same seed, different weights: %v vs %v", doneA["weights_sha256"], doneB["weights_sha256"])
	}
	if acc := doneA["test_accuracy"].(float64); acc < 0.5 || acc > 1 {
		t.Errorf("40 steps on digits 0-4: test_accuracy %v", acc)
	}

	cotrain(t, "finetune", "--weights", filepath.Join(a, "weights.ctw"), "--data", "mnist", "--classes", "5-9",
		"--train-last", "1", "--iterations", "20", "--json", "--out", ft)
	before, err := models.LoadFile(filepath.Join(a, "weights.ctw"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := models.LoadFile(filepath.Join(ft, "weights.ctw"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range before.Params {
		same := slices.Equal(p.Data, after.Params[i].Data)
		last := strings.HasPrefix(p.Name, "fc3.")
		if last && same {
			t.Errorf("%s did not change", p.Name)
		}
		if !last && !same {
			t.Errorf("%s changed although frozen", p.Name)
		}
	}
}

func TestEvalAndPredict(t *testing.T) {
	dir := t.TempDir()
	cotrain(t, "train", "--iterations", "30", "--json", "--out", dir)
	w := filepath.Join(dir, "weights.ctw")
	done, _ := cotrain(t, "eval", "--weights", w, "--data", "mnist", "--json")
	if acc, ok := done["test_accuracy"].(float64); !ok || acc <= 0.2 {
		t.Errorf("eval: %v", done)
	}

	// Two real test digits as an NCHW .npy, used as is.
	test, err := data.LoadMNIST("test", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2*784)
	test.Get(0, x[:784])
	test.Get(1, x[784:])
	npy := filepath.Join(dir, "x.npy")
	f, _ := os.Create(npy)
	if err := data.WriteNPY(f, x, []int{2, 1, 28, 28}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, out := cotrain(t, "predict", "--weights", w, "--input", npy, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one object per sample, got %q", out)
	}
	var p struct {
		Logits []float64 `json:"logits"`
		Top5   []struct {
			Class int     `json:"class"`
			Prob  float64 `json:"prob"`
		} `json:"top5"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Logits) != 10 || len(p.Top5) != 5 || p.Top5[0].Prob < p.Top5[1].Prob {
		t.Errorf("prediction: %+v", p)
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.ctw")
	os.WriteFile(bad, []byte("COTRAINW\x01\x00\x00\x00\x06\x00\x00\x00len"), 0o644)
	for _, tc := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{}, true, "no command"},
		{[]string{"dance"}, true, "unknown command"},
		{[]string{"train", "--epochs", "x"}, true, "invalid value"},
		{[]string{"train", "--model", "nope", "--iterations", "1"}, false, "unknown model"},
		{[]string{"finetune", "--data", "mnist"}, true, "needs --weights"},
		{[]string{"eval", "--weights", filepath.Join(dir, "missing.ctw")}, false, "missing.ctw"},
		{[]string{"eval", "--weights", bad}, false, "truncated"},
		{[]string{"train", "--data", filepath.Join(dir, "nowhere"), "--iterations", "1"}, false, "nowhere"},
		{[]string{"train", "--classes", "3-1", "--iterations", "1"}, true, "bad range"},
		{[]string{"predict", "--weights", bad}, true, "--input"},
		{[]string{"train", "--batch", "0", "--iterations", "1"}, true, "--batch 0: want at least 1"},
		{[]string{"train", "--lr", "0", "--iterations", "1"}, true, "--lr 0: want more than 0"},
		{[]string{"train", "--epochs", "0", "--iterations", "0"}, true, "--epochs 0: want at least 1"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, errUsage) != tc.usage {
			t.Errorf("cotrain %q: error %v (usage %v), want one containing %q (usage %v)", tc.args, err, errors.Is(err, errUsage), tc.want, tc.usage)
		}
	}
}

// The bar, as a test: one epoch of LeNet-5 on real MNIST reaches 98%
// on the 10,000 test images (about 20 s on two cores).
func TestLeNet5OneEpochReaches98(t *testing.T) {
	if testing.Short() {
		t.Skip("a full epoch; skipped with -short")
	}
	done, _ := cotrain(t, "train", "--model", "lenet5", "--data", "mnist", "--epochs", "1", "--seed", "1", "--json", "--out", t.TempDir())
	if acc := done["test_accuracy"].(float64); acc < 0.98 {
		t.Errorf("lenet5 after one epoch: test accuracy %.4f, want >= 0.98", acc)
	}
}
