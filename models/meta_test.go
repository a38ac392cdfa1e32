package models

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
)

func TestParseNorm(t *testing.T) {
	for _, tc := range []struct {
		spec      string
		channels  int
		mean, std []float32
		err       bool
	}{
		{"", 1, []float32{0.1307}, []float32{0.3081}, false},
		{"", 3, []float32{0.5, 0.5, 0.5}, []float32{0.5, 0.5, 0.5}, false},
		{"mnist", 3, []float32{0.1307, 0.1307, 0.1307}, []float32{0.3081, 0.3081, 0.3081}, false},
		{"imagenet", 3, []float32{0.485, 0.456, 0.406}, []float32{0.229, 0.224, 0.225}, false},
		{"imagenet", 1, nil, nil, true},
		{"unit", 3, []float32{0, 0, 0}, []float32{1, 1, 1}, false},
		{"0.2,0.4", 3, []float32{0.2, 0.2, 0.2}, []float32{0.4, 0.4, 0.4}, false},
		{"0.1,0.2,0.3,1,2,3", 3, []float32{0.1, 0.2, 0.3}, []float32{1, 2, 3}, false},
		{"0.1,0.2,0.3", 3, nil, nil, true},
		{"0.5,0", 1, nil, nil, true},
		{"0.5,-1", 1, nil, nil, true},
		{"a,b", 1, nil, nil, true},
		{"imagnet", 3, nil, nil, true},
	} {
		n, err := ParseNorm(tc.spec, tc.channels)
		if tc.err {
			if !errors.Is(err, ErrMeta) {
				t.Errorf("ParseNorm(%q, %d) = %v, %v; want an ErrMeta", tc.spec, tc.channels, n, err)
			}
			continue
		}
		if err != nil || !slices.Equal(n.Mean, tc.mean) || !slices.Equal(n.Std, tc.std) {
			t.Errorf("ParseNorm(%q, %d) = %v, %v; want mean %v std %v", tc.spec, tc.channels, n, err, tc.mean, tc.std)
		}
	}
}

// A file written before class names and normalisation were stored (by the
// cotrain of commit 305b9eb: "cotrain import" of inception_lite_op9.onnx)
// still loads, builds, numbers its classes and gets the normalisation
// cotrain always gave three-channel inputs.
func TestOldFileLoads(t *testing.T) {
	f, err := LoadFile("testdata/inception_lite_v1_nometa.ctw")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Build(cpu.NewCPU()); err != nil {
		t.Fatal(err)
	}
	names, named, err := f.Labels()
	if err != nil || named || !slices.Equal(names, []string{"0", "1", "2", "3", "4"}) {
		t.Errorf("Labels = %q, %v, %v; want numbered, not named", names, named, err)
	}
	n, set, err := f.InputNorm()
	if err != nil || set || !slices.Equal(n.Mean, []float32{0.5, 0.5, 0.5}) || !slices.Equal(n.Std, []float32{0.5, 0.5, 0.5}) {
		t.Errorf("InputNorm = %v, %v, %v; want the default 0.5/0.5, not set", n, set, err)
	}
}

// Class names and normalisation survive a write and a read, and a bad
// record is refused with ErrMeta.
func TestMetaRoundTrip(t *testing.T) {
	f, err := LoadFile("testdata/inception_lite_v1_nometa.ctw")
	if err != nil {
		t.Fatal(err)
	}
	labels := []string{"ant", "bee", "cat", "dog", "eel"}
	norm := Norm{Mean: []float32{0.485, 0.456, 0.406}, Std: []float32{0.229, 0.224, 0.225}}
	f.Meta = WithNorm(WithLabels(f.Meta, labels), norm)
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	g, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, named, err := g.Labels(); err != nil || !named || !slices.Equal(got, labels) {
		t.Errorf("Labels = %q, %v, %v; want %q", got, named, err, labels)
	}
	if got, set, err := g.InputNorm(); err != nil || !set || !slices.Equal(got.Mean, norm.Mean) || !slices.Equal(got.Std, norm.Std) {
		t.Errorf("InputNorm = %v, %v, %v; want %v", got, set, err, norm)
	}
	for _, bad := range [][][2]string{
		{{MetaLabels, `["a","b"]`}},
		{{MetaLabels, `["a","a","b","c","d"]`}},
		{{MetaLabels, `not json`}},
	} {
		g.Meta = bad
		if _, _, err := g.Labels(); !errors.Is(err, ErrMeta) {
			t.Errorf("Labels of %q: %v, want ErrMeta", bad, err)
		}
	}
	for _, bad := range [][][2]string{
		{{MetaMean, "0.5,0.5"}, {MetaStd, "1,1,1"}},
		{{MetaMean, "0.5,0.5,x"}, {MetaStd, "1,1,1"}},
		{{MetaMean, "0,0,0"}, {MetaStd, "1,0,1"}},
	} {
		g.Meta = bad
		if _, _, err := g.InputNorm(); !errors.Is(err, ErrMeta) {
			t.Errorf("InputNorm of %q: %v, want ErrMeta", bad, err)
		}
	}
}

func TestLabelDiff(t *testing.T) {
	miss, extra, order := LabelDiff([]string{"a", "b", "c"}, []string{"a", "c", "d", "e"})
	if !slices.Equal(miss, []string{"b"}) || !slices.Equal(extra, []string{"d", "e"}) || order {
		t.Errorf("LabelDiff = %q, %q, %v", miss, extra, order)
	}
	if miss, extra, order := LabelDiff([]string{"a", "b"}, []string{"b", "a"}); miss != nil || extra != nil || !order {
		t.Errorf("reordered: %q, %q, %v", miss, extra, order)
	}
	if miss, extra, order := LabelDiff([]string{"a", "b"}, []string{"a", "b"}); miss != nil || extra != nil || order {
		t.Errorf("equal: %q, %q, %v", miss, extra, order)
	}
}

func TestDescribeLabelDiff(t *testing.T) {
	for _, tc := range []struct {
		want, names []string
		text        string
	}{
		{[]string{"a", "b", "c"}, []string{"a", "c", "d", "e"}, "extra classes d, e (not in the model); missing classes b"},
		{[]string{"a", "b"}, []string{"a"}, "missing classes b"},
		{[]string{"a", "b"}, []string{"b", "a"}, "the same classes in another order"},
		{[]string{"a", "b"}, []string{"a", "b"}, ""},
	} {
		if got := DescribeLabelDiff(tc.want, tc.names, "the model"); got != tc.text {
			t.Errorf("DescribeLabelDiff(%q, %q) = %q, want %q", tc.want, tc.names, got, tc.text)
		}
	}
}

// Retarget keeps a fitting head, and otherwise replaces exactly the last
// layer with parameters by a fresh one of the right size, keeping every
// other tensor; for built-in models and graph files alike.
func TestRetarget(t *testing.T) {
	graph, err := LoadFile("testdata/inception_lite_v1_nometa.ctw")
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.NewCPU()
	net, err := Build(b, "lenet5", Config{})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	lenet := Snapshot("lenet5", Config{}, net, nil)
	for _, tc := range []struct {
		name string
		f    *File
	}{{"graph", graph}, {"lenet5", lenet}} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.f.Resolved().Classes
			same := NumberedLabels(n)
			same[0] = "zero"
			g, changed, err := Retarget(tc.f, same, rand.New(rand.NewPCG(3, 4)))
			if err != nil || changed {
				t.Fatalf("same size, unnamed: changed %v, %v", changed, err)
			}
			if names, _, _ := g.Labels(); !slices.Equal(names, same) {
				t.Errorf("names %q, want %q", names, same)
			}
			// Named now: other names of the same count replace the head.
			other := slices.Clone(same)
			other[0] = "nought"
			if _, changed, err := Retarget(g, other, rand.New(rand.NewPCG(3, 4))); err != nil || !changed {
				t.Errorf("other names: changed %v, %v; want a new head", changed, err)
			}
			three := []string{"ant", "bee", "cat"}
			h, changed, err := Retarget(g, three, rand.New(rand.NewPCG(3, 4)))
			if err != nil || !changed {
				t.Fatalf("3 classes: changed %v, %v", changed, err)
			}
			hn, err := h.Build(b)
			if err != nil {
				t.Fatal(err)
			}
			if hn.Out.Size() != 3 || h.Config.Classes != 3 {
				t.Errorf("output %v, config %d classes; want 3", hn.Out, h.Config.Classes)
			}
			last := len(h.Params) - 1
			for i := range h.Params {
				o, p := tc.f.Params[i], h.Params[i]
				kept := slices.Equal(o.Dims, p.Dims) && slices.Equal(o.Data, p.Data)
				// The head is the last one or two tensors (weight, bias).
				if head := i >= last-1 && !slices.Equal(o.Dims, p.Dims); head == kept {
					t.Errorf("tensor %s %v -> %v: kept %v", o.Name, o.Dims, p.Dims, kept)
				}
			}
			if names, named, _ := h.Labels(); !named || !slices.Equal(names, three) {
				t.Errorf("names %q, want %q", names, three)
			}
		})
	}
}
