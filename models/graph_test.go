package models

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// asGraph returns a copy of registered model file f as a GraphModel file:
// the same tensors, with the layers written into Meta.
func asGraph(t *testing.T, f *File) *File {
	t.Helper()
	_, nodes, err := Nodes(f.Model, f.Config)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := Describe(nodes)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := EncodeGraph(layers)
	if err != nil {
		t.Fatal(err)
	}
	g := *f
	g.Model = GraphModel
	g.Meta = append(slices.Clone(f.Meta), [2]string{MetaGraph, raw})
	return &g
}

// randomFile is a weight file of a registered model with seeded weights.
func randomFile(t *testing.T, model string, c Config) (*File, *solver.Net) {
	t.Helper()
	s, err := Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	c = s.Resolve(c)
	net, err := Build(cpu.NewCPU(), model, c)
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(3, 4)))
	return Snapshot(model, c, net, nil), net
}

func forward(net *solver.Net, n int) []float32 {
	x := make([]float32, n*net.In.Size())
	for i := range x {
		x[i] = float32(i%23)/23 - 0.5
	}
	if net.CheckInput(x) != nil { // token ids: whole numbers below the vocabulary's size
		for i := range x {
			x[i] = float32(i % 23)
		}
	}
	xb := net.B.Alloc(len(x))
	net.B.Upload(xb, x)
	out := make([]float32, n*net.Out.Size())
	net.B.Download(out, net.Forward(xb, n, false))
	return out
}

// TestGraphFileBuildsTheSameNetwork describes registered models as graphs:
// File.Build of the graph file, also after a write and read, gives the
// network of the registered model, output for output.
func TestGraphFileBuildsTheSameNetwork(t *testing.T) {
	for _, tc := range []struct {
		model string
		c     Config
	}{
		{"lenet5", Config{}},
		{"lenet-caffe", Config{Classes: 7}},
		{"alexnet-small", Config{}},
		{"mobilenet-small", Config{Width: 0.25}},
		{"lstm-lm", Config{Classes: 50, Input: solver.Shape{C: 1, H: 1, W: 8}}},
		{"gru-lm", Config{Classes: 50, Input: solver.Shape{C: 1, H: 1, W: 8}}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			f, want := randomFile(t, tc.model, tc.c)
			g := asGraph(t, f)
			back, err := Read(bytes.NewReader(encode(t, g)))
			if err != nil {
				t.Fatal(err)
			}
			for name, file := range map[string]*File{"graph": g, "graph after write and read": back} {
				got, err := file.Build(cpu.NewCPU())
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got.NumParams() != want.NumParams() || got.State.Len() != want.State.Len() || got.Out != want.Out {
					t.Errorf("%s: %d params, %d state, out %v; want %d, %d, %v", name, got.NumParams(), got.State.Len(),
						got.Out, want.NumParams(), want.State.Len(), want.Out)
				}
				if a, b := forward(got, 2), forward(want, 2); !slices.Equal(a, b) {
					t.Errorf("%s: outputs differ: %v vs %v", name, a[:3], b[:3])
				}
			}
			// FileNodes reads both kinds of file.
			for _, file := range []*File{f, g} {
				c, nodes, err := FileNodes(file)
				if err != nil || c.Input != want.In || len(nodes) != len(want.Layers()) {
					t.Errorf("FileNodes(%s): %v, %d nodes, %v; want %v, %d", file.Model, c.Input, len(nodes), err, want.In, len(want.Layers()))
				}
			}
		})
	}
}

// oddLayer is a layer kind the description does not know.
type oddLayer struct{ *solver.Activation }

func TestGraphErrors(t *testing.T) {
	f, _ := randomFile(t, "lenet5", Config{})
	good := asGraph(t, f)
	withGraph := func(raw string, classes int) *File {
		g := *good
		g.Meta = [][2]string{{MetaGraph, raw}}
		if classes > 0 {
			g.Config.Classes = classes
		}
		return &g
	}
	cases := []struct {
		name string
		file *File
		want error
	}{
		{"no graph", withGraph("", 0), ErrGraph},
		{"bad json", withGraph("[{", 0), ErrGraph},
		{"no layers", withGraph("[]", 0), ErrGraph},
		{"unknown kind", withGraph(`[{"kind":"lstm","name":"r"}]`, 0), ErrGraph},
		{"pool without window", withGraph(`[{"kind":"maxpool2d","name":"p"}]`, 0), ErrGraph},
		{"weights do not fit", withGraph(`[{"kind":"flatten","name":"f"},{"kind":"linear","name":"fc","out":10}]`, 0), ErrModelMismatch},
		{"classes do not fit", withGraph(good.MetaValue(MetaGraph), 9), ErrModelMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.file.Build(cpu.NewCPU()); !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := Build(cpu.NewCPU(), GraphModel, good.Config); !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "File.Build") {
		t.Errorf("Build(%s): %v, want ErrUnknownModel pointing to File.Build", GraphModel, err)
	}
	if _, err := Lookup(GraphModel); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("%s is registered: %v", GraphModel, err)
	}
	if _, err := Describe([]solver.Node{{Layer: oddLayer{solver.NewReLU("r")}}}); !errors.Is(err, ErrGraph) {
		t.Errorf("Describe of an unknown layer type: %v", err)
	}
	// Over format version 1's 64 KiB (weights_version_test.go's
	// TestLongStringsVersion2 writes and reads such a description).
	huge := make([]Layer, 4000)
	for i := range huge {
		huge[i] = Layer{Kind: "relu", Name: strings.Repeat("r", 20)}
	}
	if g, err := EncodeGraph(huge); err != nil || len(g) <= maxString {
		t.Errorf("EncodeGraph of %d layers: %d bytes, %v; want more than %d, no error", len(huge), len(g), err, maxString)
	}
}
