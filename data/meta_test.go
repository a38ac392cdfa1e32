package data

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Describe sees through views to the metadata of each kind of data set.
func TestDescribe(t *testing.T) {
	sig, err := LoadSensorFolder("testdata/sensors", SensorOptions{Window: 2, Stride: 1})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := Shard(Subset(sig, []int{0, 2, 4}), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	m := Describe(sh)
	mean, std := sig.Norm()
	if m.Kind != "signals" || !slices.Equal(m.Classes, []string{"sitting", "walking"}) || !slices.Equal(m.Channels, []string{"x", "y", "z"}) ||
		!slices.Equal(m.Mean, mean) || !slices.Equal(m.Std, std) || m.Vocab != nil {
		t.Errorf("signals through two views: %+v", m)
	}
	if m := Describe(FilterClasses(sig, []int{1}, true)); m.Classes != nil || m.Kind != "signals" {
		t.Errorf("relabelled view keeps class names %v", m.Classes)
	}
	txt, err := LoadText("testdata/text/licenses", TextOptions{Context: 3})
	if err != nil {
		t.Fatal(err)
	}
	if m := Describe(txt); m.Kind != "text" || m.Vocab != txt.Vocab() || m.Classes != nil || m.Mean != nil {
		t.Errorf("text: %+v", m)
	}
	img, err := Synthetic(4, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if m := Describe(img); m.Kind != "images" || len(m.Classes) != 10 || m.Mean[0] != 0.5 {
		t.Errorf("images: %+v", m)
	}
	if m := Describe(nil); m.Kind != "" {
		t.Errorf("nil: %+v", m)
	}
}
