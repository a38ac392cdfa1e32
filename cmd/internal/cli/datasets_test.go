package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// An image folder whose train/ and test/ have different classes is refused,
// the difference named: label i would mean one class in training and
// another in testing.
func TestDataLabelsTrainTestDiffer(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"train/ant", "train/bee", "test/ant", "test/cat"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := DataLabels(dir)
	want := "test/ has other classes than train/: extra classes cat (not in train/); missing classes bee"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("DataLabels: %v; want an error saying %q", err, want)
	}
}

// DataLabels gives what LoadData's Labels will be, for an IDX folder too
// (without reading its images).
func TestDataLabelsIDXFolder(t *testing.T) {
	dir := t.TempDir()
	idx := func(name string, kind byte, dims ...uint32) {
		b := []byte{0, 0, 8, kind}
		n := uint32(1)
		for _, d := range dims {
			b = binary.BigEndian.AppendUint32(b, d)
			n *= d
		}
		b = append(b, make([]byte, n)...) // label 0, black pixels
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, set := range []string{"train", "t10k"} {
		idx(set+"-images-idx3-ubyte", 3, 2, 28, 28)
		idx(set+"-labels-idx1-ubyte", 1, 2)
	}
	labels, err := DataLabels(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := LoadData(dir, DataOptions{Input: solver.Shape{C: 1, H: 28, W: 28}, Norm: models.DefaultNorm(1), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(labels, d.Labels) || len(labels) != 10 {
		t.Errorf("DataLabels %q, LoadData's Labels %q; want the same ten", labels, d.Labels)
	}
}
