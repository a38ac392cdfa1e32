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

// Parameter counts as PyTorch counts them (sum of p.numel() over parameters()).
func TestParamCounts(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  int
	}{
		{"lenet5", 61706},
		{"lenet-caffe", 431080},
		{"har-cnn", 23910},
	} {
		net, err := Build(cpu.NewCPU(), tc.model, Config{})
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if got := net.NumParams(); got != tc.want {
			t.Errorf("%s: %d parameters, want %d", tc.model, got, tc.want)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(cpu.NewCPU(), "resnet-9000", Config{}); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("unknown model: %v", err)
	}
	// LeNet-5 on 8x8 inputs: the second conv's kernel no longer fits.
	if _, err := Build(cpu.NewCPU(), "lenet5", Config{Input: solver.Shape{C: 1, H: 8, W: 8}}); err == nil {
		t.Error("lenet5 on 8x8 built")
	}
}

func TestConfigPairsRoundTrip(t *testing.T) {
	c := Config{Classes: 7, Input: solver.Shape{C: 3, H: 32, W: 30}, Width: 0.25}
	got, err := ParseConfig(c.Pairs())
	if err != nil || got != c {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := ParseConfig([][2]string{{"dropout", "0.5"}}); err == nil {
		t.Error("unknown key accepted")
	}
}

func trainedLeNet(t testing.TB) (*solver.Net, solver.Optimizer) {
	t.Helper()
	b := cpu.NewCPU()
	net, err := Build(b, "lenet5", Config{})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	opt := solver.NewSGD(b, net.NumParams(), 0.9, 0, false)
	tr := solver.NewTrainer(net, opt, solver.Constant(0.01))
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 4*net.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	if _, err := tr.Step(x, []int32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	return net, opt
}

func encode(t testing.TB, f *File) []byte {
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWeightsRoundTrip(t *testing.T) {
	net, opt := trainedLeNet(t)
	f := Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, opt)
	f.Meta = [][2]string{{"iterations", "1"}}
	raw := encode(t, f)
	g, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if g.Model != "lenet5" || g.MetaValue("iterations") != "1" || g.Optimizer != "sgd" || g.OptSteps != 1 {
		t.Fatalf("header: %+v", g)
	}
	// Into a fresh network and optimizer: every float equal.
	b := cpu.NewCPU()
	net2, err := g.Build(b)
	if err != nil {
		t.Fatal(err)
	}
	opt2 := solver.NewSGD(b, net2.NumParams(), 0.9, 0, false)
	if err := g.Apply(net2, opt2); err != nil {
		t.Fatal(err)
	}
	p1, p2 := make([]float32, net.NumParams()), make([]float32, net.NumParams())
	net.B.Download(p1, net.Params)
	b.Download(p2, net2.Params)
	if !slices.Equal(p1, p2) {
		t.Error("parameters differ after round trip")
	}
	s1, _ := opt.State()
	s2, steps := opt2.State()
	v1, v2 := make([]float32, len(p1)), make([]float32, len(p1))
	net.B.Download(v1, s1["momentum"])
	b.Download(v2, s2["momentum"])
	if !slices.Equal(v1, v2) || steps != 1 {
		t.Errorf("optimizer state differs after round trip (steps %d)", steps)
	}
	// Writing again gives the same bytes.
	if !bytes.Equal(raw, encode(t, Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net2, opt2).withMeta(f.Meta))) {
		t.Error("re-encoding differs")
	}
}

func (f *File) withMeta(m [][2]string) *File { f.Meta = m; return f }

func TestWeightsRefused(t *testing.T) {
	net, opt := trainedLeNet(t)
	raw := encode(t, Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, opt))
	newer := slices.Clone(raw)
	newer[8] = FormatVersion + 1
	flipped := slices.Clone(raw)
	flipped[len(raw)/2] ^= 0x40
	for _, tc := range []struct {
		name string
		data []byte
		want error
		text string
	}{
		{"empty", nil, ErrNotWeights, "shorter than"},
		{"png", []byte("\x89PNG\r\n\x1a\nrest"), ErrNotWeights, "magic"},
		{"truncated header", raw[:20], ErrTruncated, ""},
		{"truncated weights", raw[:len(raw)/3], ErrTruncated, ""},
		{"missing checksum", raw[:len(raw)-2], ErrTruncated, ""},
		{"newer version", newer, ErrNewerVersion, "version 3"},
		{"flipped byte", flipped, ErrCorrupt, "checksum"},
		{"trailing data", append(slices.Clone(raw), 0), ErrCorrupt, "after the checksum"},
	} {
		_, err := Read(bytes.NewReader(tc.data))
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: got %v, want %v containing %q", tc.name, err, tc.want, tc.text)
		}
	}
}

func TestWeightsOfAnotherModel(t *testing.T) {
	net, _ := trainedLeNet(t)
	f := Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, nil)
	other, err := Build(cpu.NewCPU(), "lenet-caffe", Config{})
	if err != nil {
		t.Fatal(err)
	}
	before := make([]float32, other.NumParams())
	other.B.Download(before, other.Params)
	err = f.Apply(other, nil)
	if !errors.Is(err, ErrModelMismatch) || !strings.Contains(err.Error(), "conv1.weight") {
		t.Errorf("lenet5 weights into lenet-caffe: %v", err)
	}
	after := make([]float32, other.NumParams())
	other.B.Download(after, other.Params)
	if !slices.Equal(before, after) {
		t.Error("refused Apply modified the network")
	}
	if err := f.Check("lenet-caffe"); !errors.Is(err, ErrModelMismatch) {
		t.Errorf("Check: %v", err)
	}
}

func TestSaveFileAtomicAndNamed(t *testing.T) {
	net, _ := trainedLeNet(t)
	dir := t.TempDir()
	path := dir + "/w.ctw"
	if err := SaveFile(path, Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(dir + "/missing.ctw"); err == nil || !strings.Contains(err.Error(), "missing.ctw") {
		t.Errorf("missing file: %v", err)
	}
}
