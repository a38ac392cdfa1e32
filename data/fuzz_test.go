package data

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/internal/pngbomb"
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

// FuzzLoadImage feeds arbitrary bytes to the image loader (header check,
// decoding, EXIF orientation, resizing) under a small pixel limit: it must
// never panic, never decode past the limit, and fill its destination with
// an accepted image.
func FuzzLoadImage(f *testing.F) {
	for _, name := range []string{"photo_40x30.png", "exif_6.jpg"} {
		b, err := readFixtureBytes(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(3))
	}
	f.Add(pngbomb.PNG(300, 300), uint8(1)) // over the limit below
	f.Add(pngbomb.PNG(60, 40), uint8(1))
	f.Add([]byte("\x89PNG\r\n\x1a\n"), uint8(1))
	f.Fuzz(func(t *testing.T, raw []byte, c uint8) {
		ch := 1 + 2*int(c%2) // 1 or 3 channels
		dst := make([]uint8, ch*5*7)
		err := loadImageBytes(dst, raw, "fuzz", ch, 5, 7, 1<<14)
		if err == nil && !bytes.HasPrefix(raw, pngMagic) && !bytes.HasPrefix(raw, jpegMagic) {
			t.Fatalf("accepted %d bytes that are neither PNG nor JPEG", len(raw))
		}
	})
}
