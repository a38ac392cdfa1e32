package data

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The CSV folder fixture: sitting/b.csv (3 rows, no header) and
// walking/a.csv (5 rows, header x,y,z), windows of 2 every step.
func TestLoadSensorFolderFixture(t *testing.T) {
	ds, err := LoadSensorFolder("testdata/sensors", SensorOptions{Window: 2, Stride: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c, h, w := ds.Shape(); c != 3 || h != 1 || w != 2 {
		t.Errorf("shape %d×%d×%d, want 3×1×2", c, h, w)
	}
	if got := ds.ClassNames(); !slices.Equal(got, []string{"sitting", "walking"}) {
		t.Errorf("classes %v", got)
	}
	if got := ds.Channels(); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Errorf("channels %v, want the walking file's header", got)
	}
	// sitting: 3 rows → 2 windows; walking: 5 rows → 4 windows.
	var labels []int32
	for i := range ds.Len() {
		labels = append(labels, ds.Label(i))
	}
	if !slices.Equal(labels, []int32{0, 0, 1, 1, 1, 1}) {
		t.Errorf("labels %v", labels)
	}
	// Window 3 (walking, from row 1): channel-major raw values.
	want := []float32{0.3, 0.5, -0.1, 0.4, 9.7, 9.9}
	if got := ds.Raw(3); !slices.Equal(got, want) {
		t.Errorf("window 3 raw %v, want %v", got, want)
	}
	// The mean and std are over the 8 rows, each counted once.
	xs := []float64{0.01, 0.02, 0.00, 0.1, 0.3, 0.5, -0.2, 0.0}
	var m, v float64
	for _, x := range xs {
		m += x / 8
	}
	for _, x := range xs {
		v += (x - m) * (x - m) / 8
	}
	mean, std := ds.Norm()
	if math.Abs(float64(mean[0])-m) > 1e-6 || math.Abs(float64(std[0])-math.Sqrt(v)) > 1e-6 {
		t.Errorf("channel x: mean %v std %v, want %v %v", mean[0], std[0], m, math.Sqrt(v))
	}
	dst := make([]float32, 6)
	if l := ds.Get(3, dst); l != 1 {
		t.Errorf("label %d", l)
	}
	for k, r := range want {
		ch := k / 2
		if e := (r - mean[ch]) / std[ch]; dst[k] != e {
			t.Errorf("Get[%d] = %v, want %v", k, dst[k], e)
		}
	}
	// A test set normalised with the training set's values.
	te, err := LoadSensorFolder("testdata/sensors", SensorOptions{Window: 2, Stride: 1, Mean: []float32{1, 2, 3}, Std: []float32{2, 2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	te.Get(0, dst)
	if dst[0] != (0.01-1)/2 {
		t.Errorf("given norm: Get[0] = %v, want %v", dst[0], (float32(0.01)-1)/2)
	}
}

// writeFiles writes files (path → content) under a new temporary folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func rows(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, -i, 2*i)
	}
	return b.String()
}

// The defaults (128/64) cut a 300-row recording into 3 windows, and
// windows never span two recordings.
func TestSensorDefaultsAndShard(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a/1.csv": rows(300), "a/2.csv": rows(191), "b/1.csv": rows(127)})
	ds, err := LoadSensorFolder(dir, SensorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// a/1: (300-128)/64+1 = 3; a/2: (191-128)/64+1 = 1; b/1 is too short.
	if ds.Len() != 4 {
		t.Fatalf("%d windows, want 4", ds.Len())
	}
	if r := ds.Raw(3); r[0] != 0 || r[127] != 127 {
		t.Errorf("window 3 starts at %v and ends at %v, want a/2's rows 0..127", r[0], r[127])
	}
	sh, err := Shard(ds, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLoader(sh, 2, 1, true)
	x, labels := make([]float32, 2*3*128), make([]int32, 2)
	if n, done := l.Next(x, labels); n != 2 || !done {
		t.Errorf("shard 1/2 batch: %d samples, done %v; want 2, true", n, done)
	}
}

func TestSensorHostile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		opt   SensorOptions
		kind  error
		say   string
	}{
		{"ragged", map[string]string{"a/r.csv": "x,y\n1,2\n3\n"}, SensorOptions{Window: 1}, ErrFormat, "r.csv:3: 1 columns, want 2"},
		{"nan", map[string]string{"a/n.csv": "1,2\n3,NaN\n"}, SensorOptions{Window: 1}, ErrInvalid, "n.csv:2: column 2: NaN is not finite"},
		{"inf", map[string]string{"a/i.csv": "-Inf,2\n"}, SensorOptions{Window: 1}, ErrInvalid, "i.csv:1: column 1: -Inf is not finite"},
		{"overflow", map[string]string{"a/o.csv": "1e39,2\n"}, SensorOptions{Window: 1}, ErrInvalid, "o.csv:1: column 1: 1e39 is beyond float32's range"},
		{"word", map[string]string{"a/w.csv": "1,2\n3,x\n"}, SensorOptions{Window: 1}, ErrFormat, `w.csv:2: column 2: "x" is not a number`},
		{"too large", map[string]string{"a/big.csv": rows(100)}, SensorOptions{MaxBytes: 64}, ErrTooLarge, "more than the 64-byte limit"},
		{"channels", map[string]string{"a/1.csv": "1,2\n", "b/1.csv": "1,2,3\n"}, SensorOptions{Window: 1}, ErrInvalid, "every recording needs the same channels"},
		{"names", map[string]string{"a/1.csv": "x,y\n1,2\n", "b/1.csv": "u,v\n1,2\n"}, SensorOptions{Window: 1}, ErrInvalid, "names its channels [u v]"},
		{"short", map[string]string{"a/1.csv": rows(3)}, SensorOptions{Window: 4}, ErrInvalid, "no recording is 4 steps long"},
		{"header only", map[string]string{"a/1.csv": "x,y\n"}, SensorOptions{Window: 1}, ErrFormat, "no rows of numbers"},
		{"stray file", map[string]string{"a/1.csv": rows(3), "x.csv": rows(3)}, SensorOptions{Window: 1}, ErrInvalid, "not in a class sub-folder"},
		{"window", map[string]string{"a/1.csv": rows(3)}, SensorOptions{Window: -1}, nil, "window -1"},
		{"half norm", map[string]string{"a/1.csv": rows(3)}, SensorOptions{Window: 1, Mean: []float32{1, 1, 1}}, ErrInvalid, "want both or neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadSensorFolder(writeFiles(t, tc.files), tc.opt)
			if err == nil || (tc.kind != nil && !errors.Is(err, tc.kind)) || !strings.Contains(err.Error(), tc.say) {
				t.Errorf("error %v, want %v saying %q", err, tc.kind, tc.say)
			}
		})
	}
}

// ucihar is the value the fixture's generator wrote for signal si,
// window i, step t (rounded to 7 decimals, printed as %.7e).
func ucihar(si, i, t int) float64 {
	v := float64(si+1) * 0.01 * float64(i+1) * math.Sin(0.1*float64(t)+float64(si))
	return math.Round(v*1e7) / 1e7
}

func TestLoadUCIHARFixture(t *testing.T) {
	ds, err := LoadUCIHAR("testdata/uci-har", "train", nil, SensorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, l := ds.Shape(); c != 9 || l != 128 || ds.Len() != 4 || ds.Classes() != 6 {
		t.Fatalf("%d windows of %d×%d, %d classes; want 4 of 9×128, 6", ds.Len(), c, l, ds.Classes())
	}
	if n := ds.ClassNames(); n[0] != "WALKING" || n[5] != "LAYING" {
		t.Errorf("classes %v", n)
	}
	var labels []int32
	for i := range 4 {
		labels = append(labels, ds.Label(i))
	}
	if !slices.Equal(labels, []int32{4, 4, 0, 3}) { // y_train: 5 5 1 4
		t.Errorf("labels %v", labels)
	}
	names := UCIHARSignals()
	for _, p := range [][3]int{{0, 0, 0}, {3, 2, 5}, {8, 3, 127}} {
		si, i, step := p[0], p[1], p[2]
		got := float64(ds.Raw(i)[si*128+step])
		if math.Abs(got-ucihar(si, i, step)) > 1e-7 {
			t.Errorf("%s window %d step %d = %v, want %v", names[si], i, step, got, ucihar(si, i, step))
		}
	}
	acc, err := LoadUCIHAR("testdata/uci-har", "train", []string{"total_acc_x", "body_gyro_z"}, SensorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(acc.Raw(1)[128+7]); math.Abs(got-ucihar(8, 1, 7)) > 1e-7 {
		t.Errorf("body_gyro_z as channel 1: %v, want %v", got, ucihar(8, 1, 7))
	}
	for _, tc := range []struct {
		split   string
		signals []string
		opt     SensorOptions
		say     string
	}{
		{"test", nil, SensorOptions{}, "test/y_test.txt"},
		{"valid", nil, SensorOptions{}, `split "valid"`},
		{"train", []string{"acc_x"}, SensorOptions{}, `no signal "acc_x"`},
		{"train", nil, SensorOptions{Window: 64}, "window 64, but the rows of"},
	} {
		if _, err := LoadUCIHAR("testdata/uci-har", tc.split, tc.signals, tc.opt); err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s %v %+v: %v, want an error saying %q", tc.split, tc.signals, tc.opt, err, tc.say)
		}
	}
}

// A UCI HAR copy whose labels do not match its signals, or whose rows are
// ragged, is refused naming the file.
func TestUCIHARMismatch(t *testing.T) {
	files := map[string]string{"activity_labels.txt": "1 WALKING\n2 SITTING\n"}
	for _, s := range UCIHARSignals() {
		files["train/Inertial Signals/"+s+"_train.txt"] = "  1.0000000e+000  2.0000000e+000\n -3.0000000e-001  4.0000000e+000\n"
	}
	files["train/y_train.txt"] = "1\n2\n1\n"
	if _, err := LoadUCIHAR(writeFiles(t, files), "train", nil, SensorOptions{}); err == nil || !strings.Contains(err.Error(), "has 2 rows, but") {
		t.Errorf("3 labels for 2 rows: %v", err)
	}
	files["train/y_train.txt"] = "1\n3\n"
	if _, err := LoadUCIHAR(writeFiles(t, files), "train", nil, SensorOptions{}); err == nil || !strings.Contains(err.Error(), `y_train.txt:2: label "3", want 1 to 2`) {
		t.Errorf("label 3 of 2: %v", err)
	}
	files["train/y_train.txt"] = "1\n2\n"
	files["train/Inertial Signals/body_acc_y_train.txt"] = "1 2\n3\n"
	if _, err := LoadUCIHAR(writeFiles(t, files), "train", nil, SensorOptions{}); err == nil || !strings.Contains(err.Error(), "body_acc_y_train.txt:2: 1 columns, want 2") {
		t.Errorf("ragged: %v", err)
	}
	delete(files, "train/Inertial Signals/body_acc_y_train.txt")
	if _, err := LoadUCIHAR(writeFiles(t, files), "train", []string{"body_acc_x"}, SensorOptions{}); err != nil {
		t.Errorf("one signal present, one asked for: %v", err)
	} else if ds, _ := LoadUCIHAR(writeFiles(t, files), "train", []string{"body_acc_x"}, SensorOptions{}); ds.Raw(1)[0] != -0.3 {
		t.Errorf("row 2 starts at %v, want -0.3", ds.Raw(1)[0])
	}
}

func TestLoadWISDMFixture(t *testing.T) {
	ds, err := LoadWISDM("testdata/wisdm/WISDM_ar_v1.1_raw.txt", SensorOptions{Window: 3, Stride: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.ClassNames(); !slices.Equal(got, []string{"Jogging", "Sitting", "Walking"}) {
		t.Errorf("classes %v", got)
	}
	// Jogging 4 records → 2 windows, Walking 5 (two on one line) → 3,
	// Sitting 3 → 1.
	var labels []int32
	for i := range ds.Len() {
		labels = append(labels, ds.Label(i))
	}
	if !slices.Equal(labels, []int32{0, 0, 2, 2, 2, 1}) {
		t.Errorf("labels %v", labels)
	}
	// Walking's second window: records 2..4 of the run; y channel.
	want := []float32{-2.4925237, 10.56939, 13.947236}
	if got := ds.Raw(3)[3:6]; !slices.Equal(got, want) {
		t.Errorf("walking window 1, y: %v, want %v", got, want)
	}
	if got := ds.Channels(); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Errorf("channels %v", got)
	}
	for _, tc := range []struct{ body, say string }{
		{"1,Walking,5,1,2;\n", `:1: "1,Walking,5,1,2" has 5 fields`},
		{"1,Walking,5,1,2,3;\n1,Walking,6,1,NaN,3;\n", ":2: column 5: NaN is not finite"},
		{"x,Walking,5,1,2,3;\n", `user "x"`},
		{"1,Walking,t,1,2,3;\n", `timestamp "t"`},
		{"\n;\n", "holds no record"},
	} {
		p := filepath.Join(t.TempDir(), "w.txt")
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := LoadWISDM(p, SensorOptions{Window: 1}); err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%q: %v, want an error saying %q", tc.body, err, tc.say)
		}
	}
}

func TestNewSignalsChecks(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	if _, err := NewSignals(x, []int32{0}, 2, 2, 1, nil, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		x         []float32
		labels    []int32
		mean, std []float32
		say       string
	}{
		{x, []int32{1}, nil, nil, "label 1 of sample 0"},
		{x[:3], []int32{0}, nil, nil, "3 values for 1 labels"},
		{[]float32{1, float32(math.Inf(1)), 3, 4}, []int32{0}, nil, nil, "is +Inf"},
		{x, []int32{0}, []float32{0, 0}, []float32{1, 0}, "std[1] = 0"},
		{x, []int32{0}, []float32{0}, []float32{1}, "1 means and 1 stds for 2 channels"},
	} {
		if _, err := NewSignals(tc.x, tc.labels, 2, 2, 1, tc.mean, tc.std, nil, nil); err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%v: %v, want an error saying %q", tc.say, err, tc.say)
		}
	}
	// A constant channel normalises to 0 rather than dividing by zero.
	mean, std := SignalStats([]float32{5, 5, 1, 3}, 2, 2)
	if mean[0] != 5 || std[0] != 1 || mean[1] != 2 || std[1] != 1 {
		t.Errorf("stats %v %v, want [5 2] [1 1]", mean, std)
	}
}
