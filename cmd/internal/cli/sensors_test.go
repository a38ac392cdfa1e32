package cli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// accelDir writes GenerateAccel's recordings (2 of 20 s per activity) into
// a new folder.
func accelDir(t *testing.T, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	if err := data.GenerateAccel(dir, data.AccelOptions{Recordings: 2, Seconds: 20, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// KindOf tells every layout apart in one place: the fixtures of the public
// sensor formats, a recording folder, an image folder, and a file that is
// none of them.
func TestKindOf(t *testing.T) {
	img := t.TempDir()
	if err := os.MkdirAll(filepath.Join(img, "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(img, "cat", "a.png"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	split := t.TempDir()
	for _, p := range []string{"train/walking", "test/walking"} {
		if err := os.MkdirAll(filepath.Join(split, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(split, "train/walking/.hidden.png"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(split, "train/walking/r.CSV"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("the GNU General Public License\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(other, []byte("the GNU General Public License\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec string
		want DataKind
	}{
		{"mnist", KindMNIST},
		{"../../../data/testdata/sensors", KindSensors},
		{"../../../data/testdata/uci-har", KindUCIHAR},
		{"../../../data/testdata/wisdm/WISDM_ar_v1.1_raw.txt", KindWISDM},
		{img, KindImages},
		{split, KindSensors},
		{notes, KindText},
		{"../../../internal/corpus/licenses/train", KindText},
	} {
		got, err := KindOf(c.spec)
		if err != nil || got != c.want {
			t.Errorf("KindOf(%s) = %q, %v; want %q", c.spec, got, err, c.want)
		}
	}
	if k, err := KindOf(other); err == nil || !strings.Contains(err.Error(), "WISDM") {
		t.Errorf("KindOf(a .md file) = %q, %v; want an error naming the file kinds read", k, err)
	}
}

// A new model of sensor windows takes the data's channels, window and
// normalisation: LoadData with a zero Input sizes it; the training
// recordings' statistics are the norm, the stride the default.
func TestLoadDataSensorsFresh(t *testing.T) {
	dir := accelDir(t, 1)
	d, err := LoadData(dir, DataOptions{Holdout: 0.25, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, h, w := d.Train.Shape()
	if c != 3 || h != 1 || w != data.DefaultWindow {
		t.Errorf("shape %dx%dx%d, want 3x1x%d", c, h, w, data.DefaultWindow)
	}
	if !slices.Equal(d.Labels, data.AccelActivities()) || !slices.Equal(d.Signals.Channels, []string{"x", "y", "z"}) || d.Signals.Stride != data.DefaultStride {
		t.Errorf("labels %v channels %v stride %d", d.Labels, d.Signals.Channels, d.Signals.Stride)
	}
	if err := d.Norm.Check(3); err != nil || d.Norm.Mean[0] == 0 {
		t.Errorf("norm %v: %v; want the recordings' own", d.Norm, err)
	}
	// Two recordings per activity: one of each held out whole.
	if !strings.Contains(d.Split, "5 of 10 recordings") || d.Test.Len()+d.Train.Len() != 140 {
		t.Errorf("split %q (%d+%d windows); want whole recordings held out", d.Split, d.Train.Len(), d.Test.Len())
	}
	// The meta a model records reads back as d's.
	meta := d.ModelMeta(nil, d.Norm)
	sig, ok, err := models.SignalsOf(meta, 3)
	if err != nil || !ok || !slices.Equal(sig.Channels, d.Signals.Channels) || sig.Stride != d.Signals.Stride {
		t.Errorf("SignalsOf(ModelMeta) = %+v, %v, %v; want %+v", sig, ok, err, d.Signals)
	}
	norm, set, err := models.InputNorm(meta, 3)
	if err != nil || !set || !slices.Equal(norm.Mean, d.Norm.Mean) || !slices.Equal(norm.Std, d.Norm.Std) {
		t.Errorf("InputNorm(ModelMeta) = %v, %v, %v; want %v exactly", norm, set, err, d.Norm)
	}
}

// A model's window and channels bind the data: another --window, another
// channel count, and image data are refused, naming both sides.
func TestLoadDataSensorsMismatch(t *testing.T) {
	dir := accelDir(t, 1)
	norm := models.Norm{Mean: []float32{0, 0, 0}, Std: []float32{1, 1, 1}}
	in := solver.Shape{C: 3, H: 1, W: 64}
	d, err := LoadData(dir, DataOptions{Input: in, Norm: norm})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, w := d.Train.Shape(); w != 64 || !slices.Equal(d.Norm.Mean, norm.Mean) {
		t.Errorf("window %d norm %v; want the model's 64 and its norm", w, d.Norm)
	}
	_, err = LoadData(dir, DataOptions{Input: in, Norm: norm, Window: 128})
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--window 128") || !strings.Contains(err.Error(), "64 steps") {
		t.Errorf("--window 128 for a model of 64: %v", err)
	}
	six := solver.Shape{C: 6, H: 1, W: 64}
	_, err = LoadData(dir, DataOptions{Input: six, Norm: models.Norm{Mean: make([]float32, 6), Std: []float32{1, 1, 1, 1, 1, 1}}})
	if err == nil || !strings.Contains(err.Error(), "3 channels (x, y, z), the model takes 6") {
		t.Errorf("6-channel model on 3-axis recordings: %v", err)
	}
	if err := CheckFit(dir, solver.Shape{C: 3, H: 32, W: 32}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "sensor recordings") {
		t.Errorf("image model on recordings: %v", err)
	}
	img := t.TempDir()
	if err := os.MkdirAll(filepath.Join(img, "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckFit(img, in); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "holds images") {
		t.Errorf("sensor model on images: %v", err)
	}
}

// A folder with train/ and test/ of recordings comes split, the test part
// normalised with the training part's statistics.
func TestLoadDataSensorsSplit(t *testing.T) {
	dir := t.TempDir()
	for i, part := range []string{"train", "test"} {
		if err := data.GenerateAccel(filepath.Join(dir, part), data.AccelOptions{Recordings: 1, Seconds: 10, Seed: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := LoadData(dir, DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := data.Describe(d.Train).Mean, 0
	m2 := data.Describe(d.Test).Mean
	if d.Train == d.Test || !slices.Equal(m1, m2) || !strings.HasPrefix(d.Split, "train/") {
		t.Errorf("split %q, train mean %v test mean %v; want train/ and test/ with one norm", d.Split, m1, m2)
	}
}

// UCI HAR's folder and a WISDM file load through the same call, and
// DataLabels (what a worker registers with) says what LoadData's Labels
// will be.
func TestLoadDataSensorFormats(t *testing.T) {
	uci := "../../../data/testdata/uci-har"
	d, err := LoadData(uci, DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, w := d.Train.Shape(); c != 3 || w != 128 || d.Train.Len() != 4 || !slices.Equal(d.Signals.Channels, data.UCIHARSignals()[:3]) {
		t.Errorf("UCI HAR: %dx%d, %d windows, channels %v; want total_acc's 3×128, 4 windows", c, w, d.Train.Len(), d.Signals.Channels)
	}
	labels, err := DataLabels(uci)
	if err != nil || !slices.Equal(labels, d.Labels) {
		t.Errorf("UCI HAR labels %v (%v), LoadData's %v", labels, err, d.Labels)
	}
	all9, err := LoadData(uci, DataOptions{Input: solver.Shape{C: 9, H: 1, W: 128}})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := all9.Train.Shape(); c != 9 {
		t.Errorf("a 9-channel model gets %d UCI HAR signals", c)
	}
	wisdm := "../../../data/testdata/wisdm/WISDM_ar_v1.1_raw.txt"
	w, err := LoadData(wisdm, DataOptions{Window: 2, Stride: 1})
	if err != nil {
		t.Fatal(err)
	}
	labels, err = DataLabels(wisdm)
	if err != nil || !slices.Equal(labels, w.Labels) || !slices.Equal(labels, []string{"Jogging", "Sitting", "Walking"}) {
		t.Errorf("WISDM labels %v (%v), LoadData's %v", labels, err, w.Labels)
	}
}

func TestSameChannels(t *testing.T) {
	for _, c := range []struct {
		have, want []string
		ok         bool
	}{
		{[]string{"x", "y", "z"}, []string{"x", "y", "z"}, true},
		{[]string{"X", "Y", "Z"}, []string{"x", "y", "z"}, true},
		{[]string{"ch0", "ch1", "ch2"}, []string{"x", "y", "z"}, true},
		{[]string{"y", "x", "z"}, []string{"x", "y", "z"}, false},
		{[]string{"x", "y"}, []string{"x", "y", "z"}, false},
		{[]string{"ch0", "ch1"}, []string{"x", "y", "z"}, false},
	} {
		if got := SameChannels(c.have, c.want); got != c.ok {
			t.Errorf("SameChannels(%v, %v) = %v, want %v", c.have, c.want, got, c.ok)
		}
	}
}

// CheckData (what a worker runs before it registers) reads recordings as
// recordings, not as images, and names a broken one.
func TestCheckDataSensors(t *testing.T) {
	dir := accelDir(t, 1)
	if err := CheckData(dir, 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"../../../data/testdata/uci-har", "../../../data/testdata/wisdm/WISDM_ar_v1.1_raw.txt"} {
		if err := CheckData(spec, 0, nil); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	bad := filepath.Join(dir, "walking", "rec-000.csv")
	if err := os.WriteFile(bad, []byte("x,y,z\n1,2,3\n1,NaN,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckData(dir, 0, nil); err == nil || !strings.Contains(err.Error(), "rec-000.csv") {
		t.Errorf("a recording with NaN: %v", err)
	}
}

// --holdout on one folder holds out whole recordings, drawn per activity, so
// that no held-out window shares a time step with a training one; with one
// recording per activity it cannot, and splits windows, saying that they
// overlap.
func TestHoldoutByRecording(t *testing.T) {
	dir := t.TempDir()
	if err := data.GenerateAccel(dir, data.AccelOptions{Recordings: 4, Seconds: 10, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	all, err := data.LoadSensorFolder(dir, data.SensorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	train, test, held, recs := splitRecordings(all, 0.25, 3)
	if held != 5 || recs != 20 || len(train)+len(test) != all.Len() {
		t.Fatalf("%d of %d recordings held out, %d+%d of %d windows", held, recs, len(train), len(test), all.Len())
	}
	part := map[int]string{}
	heldOf := map[int32]int{}
	for name, idx := range map[string][]int{"train": train, "test": test} {
		for _, i := range idx {
			r, _ := all.Recording(i)
			if p, ok := part[r]; ok && p != name {
				t.Fatalf("recording %d has windows in train and test", r)
			}
			if _, ok := part[r]; !ok && name == "test" {
				heldOf[all.Label(i)]++
			}
			part[r] = name
		}
	}
	for c := range int32(5) {
		if heldOf[c] != 1 {
			t.Errorf("class %d: %d recordings held out, want 1 of its 4", c, heldOf[c])
		}
	}
	d, err := LoadData(dir, DataOptions{Holdout: 0.25, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if d.Test.Len() != len(test) || !strings.Contains(d.Split, "5 of 20 recordings") {
		t.Errorf("LoadData: %d test windows, split %q", d.Test.Len(), d.Split)
	}
	one := t.TempDir()
	if err := data.GenerateAccel(one, data.AccelOptions{Recordings: 1, Seconds: 10, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	w, err := LoadData(one, DataOptions{Holdout: 0.25, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.Split, "windows overlap") || w.Test.Len() == 0 {
		t.Errorf("one recording per activity: split %q; want windows held out and the overlap said", w.Split)
	}
}
