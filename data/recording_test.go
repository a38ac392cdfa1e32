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
