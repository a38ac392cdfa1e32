package main

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx"
)

const fixtureDir = "../../models/onnx/testdata"

// TestImportExportCommands imports a PyTorch export, exports the weight file
// again and imports that: the two weight files hold the same tensors.
func TestImportExportCommands(t *testing.T) {
	dir := t.TempDir()
	w1, x, w2 := filepath.Join(dir, "a.ctw"), filepath.Join(dir, "a.onnx"), filepath.Join(dir, "b.ctw")
	done, _ := cotrain(t, "import", "--onnx", filepath.Join(fixtureDir, "lenet5_softmax_op9.onnx"), "--out", w1, "--json")
	if done["event"] != "done" || done["params"] != float64(61706) || done["classes"] != float64(10) || done["input"] != "1x28x28" {
		t.Errorf("import: %v", done)
	}
	if notes, _ := done["notes"].([]any); len(notes) != 1 || !strings.Contains(notes[0].(string), "Softmax") {
		t.Errorf("import notes: %v", done["notes"])
	}
	done, _ = cotrain(t, "export", "--weights", w1, "--onnx", x, "--json")
	if done["opset"] != float64(onnx.ExportOpset) || done["model"] != "lenet5_softmax_op9" {
		t.Errorf("export: %v", done)
	}
	var text, errb bytes.Buffer
	if err := run(context.Background(), []string{"import", "--onnx", x, "--out", w2}, &text, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "61706 parameters") {
		t.Errorf("import text: %q", text.String())
	}
	a, err := models.LoadFile(w1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := models.LoadFile(w2)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Params) != len(b.Params) {
		t.Fatalf("%d and %d tensors", len(a.Params), len(b.Params))
	}
	for i := range a.Params {
		if a.Params[i].Name != b.Params[i].Name || !slices.Equal(a.Params[i].Data, b.Params[i].Data) {
			t.Errorf("tensor %d: %s and %s differ", i, a.Params[i].Name, b.Params[i].Name)
		}
	}
}

// TestExportRegisteredModel exports a registered model's weight file and
// imports it back: same outputs bit for bit.
func TestExportRegisteredModel(t *testing.T) {
	dir := t.TempDir()
	b := cpu.NewCPU()
	net, err := models.Build(b, "mobilenet-small", models.Config{Width: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 1)))
	w, x, back := filepath.Join(dir, "m.ctw"), filepath.Join(dir, "m.onnx"), filepath.Join(dir, "back.ctw")
	if err := models.SaveFile(w, models.Snapshot("mobilenet-small", models.Config{Classes: 10, Input: net.In, Width: 0.25}, net, nil)); err != nil {
		t.Fatal(err)
	}
	cotrain(t, "export", "--weights", w, "--onnx", x, "--json")
	cotrain(t, "import", "--onnx", x, "--out", back, "--json")
	f, err := models.LoadFile(back)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Build(b)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float32, 2*net.In.Size())
	for i := range in {
		in[i] = float32(i%17) / 17
	}
	xb := b.Alloc(len(in))
	b.Upload(xb, in)
	want := make([]float32, 2*net.Out.Size())
	b.Download(want, net.Forward(xb, 2, false))
	have := make([]float32, len(want))
	b.Download(have, got.Forward(xb, 2, false))
	if !slices.Equal(have, want) {
		t.Errorf("outputs differ: %v vs %v", have[:3], want[:3])
	}
}

func TestImportExportRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.onnx")
	if err := os.WriteFile(bad, []byte("not an onnx file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		usage   bool
		wantErr string
	}{
		{"import without flags", []string{"import"}, true, "--onnx"},
		{"export without flags", []string{"export", "--weights", "w"}, true, "--onnx"},
		{"import garbage", []string{"import", "--onnx", bad, "--out", filepath.Join(dir, "x.ctw")}, false, "bad.onnx"},
		{"import missing file", []string{"import", "--onnx", filepath.Join(dir, "none.onnx"), "--out", filepath.Join(dir, "x.ctw")}, false, "none.onnx"},
		{"export missing weights", []string{"export", "--weights", filepath.Join(dir, "none.ctw"), "--onnx", filepath.Join(dir, "x.onnx")}, false, "none.ctw"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), tc.args, &out, &errb)
			if err == nil || errors.Is(err, errUsage) != tc.usage || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v (usage %v), want one naming %q (usage %v)", err, errors.Is(err, errUsage), tc.wantErr, tc.usage)
			}
			if _, statErr := os.Stat(filepath.Join(dir, "x.ctw")); statErr == nil {
				t.Error("a weight file was written")
			}
		})
	}
}
