package data

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Image loading resizes as torchvision does and turns photos upright as
// their EXIF orientation says. The fixtures come from
// scripts/make_image_fixtures.py (torch 1.13, torchvision 0.14, PIL 9.4).

// fixturePlanes decodes a testdata image into float planes and its size.
func fixturePlanes(t *testing.T, name string) (planes [][]float32, w, h int) {
	t.Helper()
	img, err := decodeImage(bufio.NewReader(bytes.NewReader(readFixture(t, name))))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	return toPlanes(img, 3), b.Dx(), b.Dy()
}

// TestResizeMatchesTorchvision compares the resize of a 40x30 photo with
// torchvision's resize(antialias=True) of the float tensor, which is the
// same arithmetic in float: ours may differ only by rounding to a byte
// (0.5, plus 1e-3 for float32 noise). It also compares with PIL's resize of
// the image, what torchvision does to a PIL image: PIL rounds to bytes
// between its horizontal and vertical passes and uses fixed-point weights,
// so there the tolerance is 1 (measured: at most 1).
func TestResizeMatchesTorchvision(t *testing.T) {
	src, w, h := fixturePlanes(t, "photo_40x30.png")
	for _, size := range [][2]int{{16, 16}, {7, 13}, {29, 40}, {45, 50}, {30, 40}} {
		dh, dw := size[0], size[1]
		got := make([]uint8, 3*dh*dw)
		for c := range 3 {
			resizeAA(got[c*dh*dw:(c+1)*dh*dw], dh, dw, src[c], h, w)
		}
		for _, ref := range []struct {
			prefix string
			tol    float64
		}{{"resize_tv", 0.5 + 1e-3}, {"resize_pil", 1}} {
			name := fmt.Sprintf("%s_%dx%d.npy", ref.prefix, dh, dw)
			want, shape, err := ReadNPY(bytes.NewReader(readFixture(t, name)))
			if err != nil {
				t.Fatal(err)
			}
			if len(shape) != 3 || shape[0] != 3 || shape[1] != dh || shape[2] != dw {
				t.Fatalf("%s has shape %v", name, shape)
			}
			var worst float64
			for i, v := range want {
				worst = math.Max(worst, math.Abs(float64(got[i])-float64(v)))
			}
			t.Logf("%s: largest difference %.4f", name, worst)
			if worst > ref.tol {
				t.Errorf("%s: largest difference %.3f, want <= %.3f", name, worst, ref.tol)
			}
		}
	}
	// Plain bilinear sampling, without antialiasing, misses the 2-pixel
	// checkerboard of the blue channel; the antialiased resize averages it
	// to about 128. Guard that the filter really widens when shrinking.
	dst := make([]uint8, 16*16)
	resizeAA(dst, 16, 16, src[2], h, w)
	var sum float64
	for _, v := range dst {
		sum += float64(v)
	}
	if mean := sum / 256; math.Abs(mean-127.5) > 10 {
		t.Errorf("blue checkerboard shrunk to mean %.1f, want about 127.5", mean)
	}
}

// TestEXIFOrientation loads a JPEG whose EXIF Orientation is 6 and gets
// PIL's exif_transpose of it: the upright image, 4 wide and 6 high.
func TestEXIFOrientation(t *testing.T) {
	raw := readFixture(t, "exif_6.jpg")
	if o := jpegOrientation(raw); o != 6 {
		t.Fatalf("orientation %d, want 6", o)
	}
	want, shape, err := ReadNPY(bytes.NewReader(readFixture(t, "exif_6_upright.npy")))
	if err != nil {
		t.Fatal(err)
	}
	if len(shape) != 3 || shape[1] != 6 || shape[2] != 4 {
		t.Fatalf("golden of shape %v", shape)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "photo.jpg"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make([]uint8, 3*6*4)
	if err := loadImageFile(got, filepath.Join(dir, "photo.jpg"), 3, 6, 4, DefaultMaxPixels); err != nil {
		t.Fatal(err)
	}
	// The same decoder output, so the bytes agree up to the JPEG
	// decoders' rounding (Go's and libjpeg's IDCTs differ slightly).
	var worst float64
	for i, v := range want {
		worst = math.Max(worst, math.Abs(float64(got[i])-float64(v)))
	}
	t.Logf("upright image: largest difference from PIL %.0f", worst)
	if worst > 3 {
		t.Errorf("upright image differs from PIL's by up to %.0f, want <= 3\ngot  %v\nwant %v", worst, got, want)
	}
}

// TestOrientAll checks all eight orientations on a 3x2 image against
// their definitions (EXIF 2.32, tag 0x0112): each turns the stored image
// into the one a viewer shows.
func TestOrientAll(t *testing.T) {
	// Stored:  a b c
	//          d e f
	src := []float32{'a', 'b', 'c', 'd', 'e', 'f'}
	for o, want := range map[int]string{
		1: "abc/def", 2: "cba/fed", 3: "fed/cba", 4: "def/abc",
		5: "ad/be/cf", 6: "da/eb/fc", 7: "fc/eb/da", 8: "cf/be/ad",
	} {
		out, w, h := orient([][]float32{src}, 3, 2, o)
		var s []byte
		for y := range h {
			if y > 0 {
				s = append(s, '/')
			}
			for x := range w {
				s = append(s, byte(out[0][y*w+x]))
			}
		}
		if string(s) != want {
			t.Errorf("orientation %d: %s, want %s", o, s, want)
		}
	}
}

// FuzzJPEGOrientation: no panic on any bytes, and a value in 1..8.
func FuzzJPEGOrientation(f *testing.F) {
	f.Add(readFixtureBytesMust(f, "exif_6.jpg"))
	f.Add([]byte{0xff, 0xd8, 0xff, 0xe1, 0, 8, 'E', 'x', 'i', 'f', 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if o := jpegOrientation(b); o < 1 || o > 8 {
			t.Fatalf("orientation %d", o)
		}
	})
}

func readFixtureBytesMust(f *testing.F, name string) []byte {
	b, err := readFixtureBytes(name)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// BenchmarkResizeAA times shrinking one channel of a 12-megapixel phone
// photo (4032×3024) to 224×224, and a 640×480 one, with antialiasing.
//
//	go test ./data -run '^$' -bench ResizeAA
func BenchmarkResizeAA(b *testing.B) {
	for _, size := range [][2]int{{3024, 4032}, {480, 640}} {
		sh, sw := size[0], size[1]
		b.Run(fmt.Sprintf("%dx%d-to-224", sw, sh), func(b *testing.B) {
			src := make([]float32, sh*sw)
			for i := range src {
				src[i] = float32(i % 251)
			}
			dst := make([]uint8, 224*224)
			b.SetBytes(int64(len(src)))
			for range b.N {
				resizeAA(dst, 224, 224, src, sh, sw)
			}
		})
	}
}

// TestToPlanesFastPaths: the pixel-array paths of toPlanes give exactly
// what image.Image.At gives, for every decoder type, in RGB and grayscale,
// on an image whose bounds do not start at the origin.
func TestToPlanesFastPaths(t *testing.T) {
	r := image.Rect(3, 2, 3+7, 2+5)
	rgba, nrgba, gray := image.NewRGBA(r), image.NewNRGBA(r), image.NewGray(r)
	for i := range rgba.Pix {
		rgba.Pix[i], nrgba.Pix[i] = uint8(i*37), uint8(i*53)
	}
	for i := range rgba.Pix {
		if i%4 == 3 { // premultiplied RGBA needs colour <= alpha
			rgba.Pix[i] = 255
		}
	}
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i * 29)
	}
	var ycc []*image.YCbCr
	for _, sr := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio422} {
		m := image.NewYCbCr(r, sr)
		for i := range m.Y {
			m.Y[i] = uint8(i * 11)
		}
		for i := range m.Cb {
			m.Cb[i], m.Cr[i] = uint8(i*17), uint8(255-i*13)
		}
		ycc = append(ycc, m)
	}
	imgs := []image.Image{rgba, nrgba, gray, ycc[0], ycc[1], ycc[2]}
	for _, img := range imgs {
		for _, c := range []int{1, 3} {
			got, want := toPlanes(img, c), toPlanes(atOnly{img}, c)
			for ch := range got {
				for i := range got[ch] {
					if got[ch][i] != want[ch][i] {
						t.Fatalf("%T, %d channels: plane %d[%d] = %v, At gives %v", img, c, ch, i, got[ch][i], want[ch][i])
					}
				}
			}
		}
	}
}

// atOnly hides an image's type, so toPlanes reads it through At.
type atOnly struct{ image.Image }

// BenchmarkToPlanes converts a decoded 12-megapixel JPEG (4032×3024) to
// RGB planes, by the pixel arrays and through At.
func BenchmarkToPlanes(b *testing.B) {
	src := image.NewRGBA(image.Rect(0, 0, 4032, 3024))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 7 % 251)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, src, &jpeg.Options{Quality: 85}); err != nil {
		b.Fatal(err)
	}
	img, err := jpeg.Decode(&buf)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pixels", func(b *testing.B) {
		for range b.N {
			toPlanes(img, 3)
		}
	})
	b.Run("At", func(b *testing.B) {
		for range b.N {
			toPlanes(atOnly{img}, 3)
		}
	})
}
