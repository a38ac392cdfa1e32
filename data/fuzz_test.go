package data

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzReadNPY feeds arbitrary bytes to ReadNPY: it must never panic, and
// whatever it accepts must survive a WriteNPY/ReadNPY round trip.
func FuzzReadNPY(f *testing.F) {
	for _, name := range []string{"f32_2x3x4_v1.npy", "f32_5_v2.npy", "f32_scalar_v1.npy", "f64_2x3.npy", "f32_fortran.npy"} {
		b, err := readFixtureBytes(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		data, shape, err := ReadNPY(bytes.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteNPY(&buf, data, shape); err != nil {
			t.Fatalf("WriteNPY of an accepted array: %v", err)
		}
		data2, shape2, err := ReadNPY(&buf)
		if err != nil || !slices.Equal(shape, shape2) || len(data) != len(data2) {
			t.Fatalf("round trip: %v %v %v", shape, shape2, err)
		}
	})
}

// FuzzReadIDX feeds arbitrary bytes to ReadIDX: it must never panic, and an
// accepted array holds exactly the product of its dimensions.
func FuzzReadIDX(f *testing.F) {
	img, lab := tinyIDX()
	f.Add(img, 3)
	f.Add(lab, 1)
	f.Add(img[:7], 3)
	f.Fuzz(func(t *testing.T, in []byte, dims int) {
		if dims < 0 || dims > 8 {
			return
		}
		b, d, err := ReadIDX(bytes.NewReader(in), dims)
		if err != nil {
			return
		}
		n := 1
		for _, x := range d {
			n *= x
		}
		if len(b) != n || len(d) != dims {
			t.Fatalf("%d bytes for dims %v (want %d dims)", len(b), d, dims)
		}
	})
}
