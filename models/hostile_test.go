//go:build !386 && !arm && !mips && !mipsle

// The cases are issue 28's 64-bit sizes (2^60-11, 2^62+7, 2^32, ...),
// which a 32-bit int cannot hold: on a 32-bit build they do not compile,
// and such values are refused where they are decoded.

package models

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/solver"
)

// hostileGraphFile is a graph file of LeNet-5 whose description edit
// changes, holding params tensors of the given dims (zero data), written
// and read back through the weight-file format.
func hostileGraphFile(t *testing.T, edit func([]Layer), cfg Config, params []NamedTensor) *File {
	t.Helper()
	c, nodes, err := Nodes("lenet5", Config{})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := Describe(nodes)
	if err != nil {
		t.Fatal(err)
	}
	edit(layers)
	graph, err := EncodeGraph(layers)
	if err != nil {
		t.Fatal(err)
	}
	if cfg == (Config{}) {
		cfg = c
	}
	var buf bytes.Buffer
	if err := Write(&buf, &File{Model: GraphModel, Config: cfg, Meta: [][2]string{{MetaGraph, graph}}, Params: params}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// lenetTensors are LeNet-5's parameter tensors with fc1 taking in inputs.
func lenetTensors(in int) []NamedTensor {
	var ts []NamedTensor
	for _, d := range []struct {
		name string
		dims []int
	}{{"conv1.weight", []int{6, 1, 5, 5}}, {"conv1.bias", []int{6}}, {"conv2.weight", []int{16, 6, 5, 5}}, {"conv2.bias", []int{16}},
		{"fc1.weight", []int{120, in}}, {"fc1.bias", []int{120}}, {"fc2.weight", []int{84, 120}}, {"fc2.bias", []int{84}},
		{"fc3.weight", []int{10, 84}}, {"fc3.bias", []int{10}}} {
		n := 1
		for _, x := range d.dims {
			n *= x
		}
		ts = append(ts, NamedTensor{d.name, d.dims, make([]float32, n)})
	}
	return ts
}

// TestBuildHostileFile: weight files the old importer wrote from issue 28's
// crafted models (their descriptions, with weights that fit the sizes the
// old arithmetic wrapped to) are refused by Plan, Net and Build with an
// error naming the size, before anything is allocated.
func TestBuildHostileFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *File
		want error
		text string
	}{
		{"conv pads 2^60-11", hostileGraphFile(t, func(l []Layer) { l[0].PH, l[0].PW = 1<<60-11, 1<<60-11 }, Config{}, lenetTensors(64)),
			limits.ErrTooLarge, "pad height 1152921504606846965"},
		{"conv stride 0", hostileGraphFile(t, func(l []Layer) { l[0].SH, l[0].SW = 0, 0 }, Config{}, lenetTensors(400)),
			limits.ErrInvalid, "stride height 0"},
		{"conv groups 0", hostileGraphFile(t, func(l []Layer) { l[0].Groups = 0 }, Config{}, lenetTensors(400)),
			limits.ErrInvalid, "groups 0"},
		{"maxpool stride 0", hostileGraphFile(t, func(l []Layer) { l[2].SH, l[2].SW = 0, 0 }, Config{}, lenetTensors(400)),
			limits.ErrInvalid, "stride height 0"},
		// Input 1×(2^62+7)×4: the old solver's 4·(2^62+7) wrapped to 28.
		{"input rows 2^62+7", hostileGraphFile(t, func([]Layer) {}, Config{Classes: 10, Input: solver.Shape{C: 1, H: 1<<62 + 7, W: 4}}, lenetTensors(28)),
			limits.ErrTooLarge, "4611686018427387911"},
		// Input channels 2^32: the old solver asked for a 1.2 TB block.
		{"input channels 2^32", hostileGraphFile(t, func([]Layer) {}, Config{Classes: 10, Input: solver.Shape{C: 1 << 32, H: 28, W: 28}}, lenetTensors(400)),
			limits.ErrTooLarge, "4294967296"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.f.Plan(); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("Plan: %v, want %v saying %q", err, tc.want, tc.text)
			}
			if _, err := tc.f.Net(cpu.NewCPU()); !errors.Is(err, tc.want) {
				t.Errorf("Net: %v, want %v", err, tc.want)
			}
			if _, err := tc.f.Build(cpu.NewCPU()); !errors.Is(err, tc.want) {
				t.Errorf("Build: %v, want %v", err, tc.want)
			}
		})
	}
	// A registered model takes the same path: 2^32 input channels.
	if _, err := Build(cpu.NewCPU(), "lenet5", Config{Classes: 10, Input: solver.Shape{C: 1 << 32, H: 28, W: 28}}); !errors.Is(err, limits.ErrTooLarge) {
		t.Errorf("lenet5 on 2^32 channels: %v, want limits.ErrTooLarge", err)
	}
}

// TestBuildChecksWeightsFirst: a description within the limits whose
// weights do not fill it is refused by comparing shapes, before NewNet
// allocates (an fc1 of 2^20 units would take 1.6 GB of parameters and
// gradients).
func TestBuildChecksWeightsFirst(t *testing.T) {
	f := hostileGraphFile(t, func(l []Layer) {
		for i := range l {
			if l[i].Name == "fc1" {
				l[i].Out = 1 << 20
			}
		}
	}, Config{}, lenetTensors(400))
	lay, err := f.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if lay.NumParams < 400<<20 {
		t.Fatalf("plan of %d parameters, want over %d", lay.NumParams, 400<<20)
	}
	if _, err := f.Build(cpu.NewCPU()); !errors.Is(err, ErrModelMismatch) || !strings.Contains(err.Error(), "fc1.weight") {
		t.Fatalf("Build: %v, want ErrModelMismatch naming fc1.weight", err)
	}
}

// FuzzBuild feeds arbitrary bytes to the weight-file reader and builds
// what it accepts (File.Build: the registered model or the stored graph,
// every size through internal/limits, the tensors compared with the
// layout before anything is allocated): it must never panic, and a net it
// builds holds the file's tensors.
func FuzzBuild(f *testing.F) {
	net, opt := trainedLeNet(f)
	f.Add(encode(f, Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, opt)))
	graph := func(edit func([]Layer), params []NamedTensor) []byte {
		c, nodes, err := Nodes("lenet5", Config{})
		if err != nil {
			f.Fatal(err)
		}
		layers, err := Describe(nodes)
		if err != nil {
			f.Fatal(err)
		}
		edit(layers)
		g, err := EncodeGraph(layers)
		if err != nil {
			f.Fatal(err)
		}
		return encode(f, &File{Model: GraphModel, Config: c, Meta: [][2]string{{MetaGraph, g}}, Params: params})
	}
	f.Add(graph(func([]Layer) {}, lenetTensors(400)))
	f.Add(graph(func(l []Layer) { l[0].PH, l[0].PW = 1<<60-11, 1<<60-11 }, lenetTensors(64)))
	f.Add(graph(func(l []Layer) { l[0].SH = 0 }, lenetTensors(400)))
	if raw, err := os.ReadFile("testdata/inception_lite_v1_nometa.ctw"); err == nil {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The checksum is made to fit, so that mutations of the body (the
		// graph's JSON, the config, the dims) reach Build instead of
		// failing the CRC.
		if len(b) >= 12 {
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
		}
		file, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		net, err := file.Build(cpu.NewCPU())
		if err != nil {
			return
		}
		if len(file.Params) != len(net.Tensors()) {
			t.Fatalf("built %d tensors from a file of %d", len(net.Tensors()), len(file.Params))
		}
	})
}
