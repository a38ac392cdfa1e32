package data

import (
	"errors"
	"slices"
	"testing"
)

// LoadRecording cuts one CSV recording as LoadSensorFolder cuts each of a
// folder's: windows every stride, channels named by the header, values
// normalised with the given statistics.
func TestLoadRecording(t *testing.T) {
	path := "testdata/sensors/walking/a.csv" // header x,y,z and 5 rows
	r, err := LoadRecording(path, SensorOptions{Window: 2, Stride: 2, Mean: []float32{0, 0, 0}, Std: []float32{1, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if c, h, l := r.Shape(); c != 3 || h != 1 || l != 2 || r.Len() != 2 || !slices.Equal(r.Channels(), []string{"x", "y", "z"}) {
		t.Fatalf("shape %d×%d×%d, %d windows, channels %v; want 3×1×2, 2 windows of x, y, z", c, h, l, r.Len(), r.Channels())
	}
	x := make([]float32, 6)
	r.Get(0, x)
	if want := []float32{0.1, 0.3, 0.2, -0.1, 4.9, 4.85}; !slices.Equal(x, want) {
		t.Errorf("first window %v, want %v (channel-major, z halved)", x, want)
	}
	if _, err := LoadRecording(path, SensorOptions{Window: 6}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a window longer than the recording: %v", err)
	}
}

// AccelSignals gives, without files, the windows LoadSensorFolder reads
// from what GenerateAccel writes for the same options: the same values,
// labels, channels and normalisation, bit for bit.
func TestAccelSignalsMatchFiles(t *testing.T) {
	opt := AccelOptions{Recordings: 2, Seconds: 6, Seed: 9}
	dir := t.TempDir()
	if err := GenerateAccel(dir, opt); err != nil {
		t.Fatal(err)
	}
	files, err := LoadSensorFolder(dir, SensorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := AccelSignals(opt, SensorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mem.Len() != files.Len() || !slices.Equal(mem.ClassNames(), files.ClassNames()) || !slices.Equal(mem.Channels(), files.Channels()) {
		t.Fatalf("%d windows of %v %v, files give %d of %v %v", mem.Len(), mem.ClassNames(), mem.Channels(), files.Len(), files.ClassNames(), files.Channels())
	}
	m1, s1 := mem.Norm()
	m2, s2 := files.Norm()
	if !slices.Equal(m1, m2) || !slices.Equal(s1, s2) {
		t.Errorf("norm %v %v, files' %v %v", m1, s1, m2, s2)
	}
	for i := range mem.Len() {
		if mem.Label(i) != files.Label(i) || !slices.Equal(mem.Raw(i), files.Raw(i)) {
			t.Fatalf("window %d differs from the files'", i)
		}
	}
}

// A loader that cuts recordings says which recording each window came
// from; NewSignals, given windows, does not.
func TestSignalsRecording(t *testing.T) {
	// 6 s at 50 Hz: (300-128)/64+1 = 3 windows a recording.
	s, err := AccelSignals(AccelOptions{Recordings: 2, Seconds: 6, Seed: 1}, SensorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 5*2*3 {
		t.Fatalf("%d windows, want 30", s.Len())
	}
	for i := range s.Len() {
		if r, ok := s.Recording(i); !ok || r != i/3 {
			t.Fatalf("window %d: recording %d (%v), want %d", i, r, ok, i/3)
		}
	}
	n, err := NewSignals(make([]float32, 6), []int32{0, 0}, 3, 1, 1, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Recording(0); ok {
		t.Error("NewSignals' windows claim a recording")
	}
}
