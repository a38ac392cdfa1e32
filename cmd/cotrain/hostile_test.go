package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
)

// TestPredictNonFinite: a NaN or an infinity in an input is an error
// naming the file and the position (issue 28: predict printed
// "0 (NaN), 1 (NaN)" and exited 0).
func TestPredictNonFinite(t *testing.T) {
	dir := t.TempDir()
	net, err := models.Build(cpu.NewCPU(), "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	w := filepath.Join(dir, "w.ctw")
	if err := models.SaveFile(w, models.Snapshot("lenet5", models.Config{Classes: 10, Input: net.In}, net, nil)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v    float32
		want string
	}{{float32(math.NaN()), "is NaN"}, {float32(math.Inf(1)), "is +Inf"}, {float32(math.Inf(-1)), "is -Inf"}} {
		x := make([]float32, 2*784)
		x[784+3*28+5] = tc.v // sample 1, row 3, column 5
		npy := filepath.Join(dir, "x.npy")
		fh, _ := os.Create(npy)
		if err := data.WriteNPY(fh, x, []int{2, 1, 28, 28}); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{"predict", "--weights", w, "--input", npy}, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), npy) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "sample 1, channel 0, row 3, column 5") {
			t.Errorf("%v: error %v, printed %q", tc.v, err, out.String())
		}
	}
}

// TestDamagedCurveIsDropped: a loss-curve side file that is damaged (a
// flipped byte), of the old unchecked format full of NaNs, or 300 MB long
// is dropped with a warning, read no further than a curve of the run's
// length, and never stops the resume.
func TestDamagedCurveIsDropped(t *testing.T) {
	dir := t.TempDir()
	c := trainConfig{model: "lenet5", out: dir, seed: 1}
	k, tr, _ := testCheckpointer(t, c)
	tr.Iter = 3
	if err := k.save(0.25, []float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, trainCurveName)
	good, _ := os.ReadFile(path)
	nans := make([]byte, 0, 24)
	for range 3 {
		nans = binary.LittleEndian.AppendUint64(nans, math.Float64bits(math.NaN()))
	}
	for _, tc := range []struct {
		name  string
		write func()
		want  string
	}{
		{"flipped byte", func() { b := bytes.Clone(good); b[20] ^= 4; os.WriteFile(path, b, 0o600) }, "checksum"},
		{"old format, NaNs", func() { os.WriteFile(path, nans, 0o600) }, "not a loss curve"},
		{"300 MB", func() {
			fh, _ := os.Create(path)
			fh.Write(good[:16])
			fh.Truncate(300 << 20) // sparse: no disk, but 300 MB to a reader
			fh.Close()
		}, "longer than a curve of 10 steps"},
		{"too short", func() { os.WriteFile(path, encodeCurve([]float64{1, 2}), 0o600) }, "want 3 to 10 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.write()
			k2, _, _ := testCheckpointer(t, c)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, curve, warn, err := k2.restore(10)
			runtime.ReadMemStats(&after)
			if err != nil || curve != nil || !strings.Contains(warn, tc.want) || !strings.Contains(warn, "dropped") {
				t.Errorf("curve %v, warning %q, error %v; want a warning saying %q", curve, warn, err, tc.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Errorf("restore allocated %d bytes", grew)
			}
		})
	}
}

// TestResumeWithDamagedCurve is issue 28's run: a checkpoint beside a
// curve file full of NaNs. The old resume ended with "chart: plot …:
// plotter: NaN data point" and exit 1 after writing the weights, leaving
// the checkpoint to fail every later --resume the same way; now it warns,
// finishes, plots and removes the checkpoint.
func TestResumeWithDamagedCurve(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir, 100)
	out := filepath.Join(dir, "out")
	args := []string{"train", "--model", "lenet5", "--data", dir, "--iterations", "12", "--batch", "8", "--json", "--out", out}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	stop := &cancelAt{w: &stdout, at: `"iteration":4,`, cancel: cancel}
	if err := run(ctx, append(args, "--checkpoint-every", "4"), stop, &stderr); !errors.As(err, new(*interruptedError)) {
		t.Fatalf("cancelled run: %v", err)
	}
	nans := make([]byte, 0, 8*12)
	for range 12 {
		nans = binary.LittleEndian.AppendUint64(nans, math.Float64bits(math.NaN()))
	}
	if err := os.WriteFile(filepath.Join(out, trainCurveName), nans, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if err := run(context.Background(), append(args, "--resume"), &stdout, &stderr); err != nil {
		t.Fatalf("resume: %v\nstderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "dropped") {
		t.Errorf("no warning about the curve: %q", stderr.String())
	}
	for _, name := range []string{trainCheckpointName, trainCurveName} {
		if _, err := os.Stat(filepath.Join(out, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after the run: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "loss.png")); err != nil {
		t.Errorf("no plot: %v", err)
	}
}

// TestCheckpointDirectory: a directory named train.ckpt is called one
// (issue 28: "shorter than its 8-byte magic").
func TestCheckpointDirectory(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir, 50)
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(filepath.Join(out, trainCheckpointName), 0o755); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	err := run(context.Background(), []string{"train", "--model", "lenet5", "--data", dir, "--iterations", "4", "--batch", "8",
		"--json", "--out", out, "--resume"}, &o, &e)
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("error %v, want one saying the checkpoint is a directory", err)
	}
}
