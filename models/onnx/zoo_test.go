package onnx

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu/cpu"
)

// zooModel is one entry of zoo.json (scripts/onnx_zoo.py).
type zooModel struct {
	Name    string   `json:"name"`
	Opset   int      `json:"opset"`
	Input   [3]int   `json:"input"`
	Classes int      `json:"classes"`
	Params  int      `json:"params"`
	Ops     []string `json:"ops"`
	Nodes   int      `json:"nodes"`
}

// TestZoo imports the well-known CNN families that scripts/onnx_zoo.py
// exports from torchvision with random weights (files too large to commit)
// and compares each one's logits with PyTorch's to a relative 1e-4. It runs
// when COTRAIN_ONNX_ZOO names the folder the script wrote, and prints a
// line per model: imported or the importer's refusal, layers, parameters,
// the relative error and the time taken. COTRAIN_ONNX_ZOO_ONLY limits it to
// a comma-separated list of names.
func TestZoo(t *testing.T) {
	dir := os.Getenv("COTRAIN_ONNX_ZOO")
	if dir == "" {
		t.Skip("COTRAIN_ONNX_ZOO is not set: run /usr/bin/python3 scripts/onnx_zoo.py DIR, then COTRAIN_ONNX_ZOO=DIR")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "zoo.json"))
	if err != nil {
		t.Skipf("no zoo in %s (%v): run /usr/bin/python3 scripts/onnx_zoo.py %s", dir, err, dir)
	}
	var zoo []zooModel
	if err := json.Unmarshal(raw, &zoo); err != nil {
		t.Fatalf("%s/zoo.json: %v", dir, err)
	}
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("COTRAIN_ONNX_ZOO_ONLY"), ",") {
		if n != "" {
			only[n] = true
		}
	}
	var summary []string
	for _, m := range zoo {
		if len(only) > 0 && !only[m.Name] {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			line := zooCheck(t, dir, m)
			summary = append(summary, fmt.Sprintf("%-20s %s", m.Name, line))
		})
	}
	t.Logf("zoo summary (%s):\n%s", dir, strings.Join(summary, "\n"))
}

// zooCheck imports, runs and compares one model; it returns the summary line.
func zooCheck(t *testing.T, dir string, m zooModel) string {
	base := filepath.Join(dir, m.Name)
	start := time.Now()
	fh, err := os.Open(base + ".onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := Import(fh)
	if err != nil {
		t.Errorf("import: %v", err)
		return "NOT IMPORTED: " + err.Error()
	}
	net, err := f.Build(cpu.NewCPU())
	if err != nil {
		t.Errorf("build: %v", err)
		return "NOT BUILT: " + err.Error()
	}
	imported := time.Since(start)
	x, _ := readNPY(t, base+".x.npy")
	want, _ := readNPY(t, base+".y.npy")
	start = time.Now()
	got := forward(net, x)
	ran := time.Since(start)
	e := relErr(got, want)
	line := fmt.Sprintf("imported: %d layers, %d params (PyTorch %d), max logit error %.2g (import %v, forward of %d %v)",
		len(net.Layers()), net.NumParams(), m.Params, e, imported.Round(time.Millisecond), len(x)/net.In.Size(), ran.Round(time.Millisecond))
	if !(e <= 1e-4) {
		t.Errorf("relative error %.3g > 1e-4 (got %v, want %v)", e, got[:min(4, len(got))], want[:min(4, len(want))])
		line += " FAIL"
	}
	t.Log(line)
	return line
}
