package data

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// solidImage returns a w×h NRGBA image of one colour.
func solidImage(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

func pngBytes(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jpegBytes(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// makeFolder writes files (relative path -> bytes) under a new temp dir.
func makeFolder(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for rel, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadImageFolder(t *testing.T) {
	red := color.NRGBA{200, 0, 0, 255}
	blue := color.NRGBA{0, 0, 250, 255}
	gray := image.NewGray(image.Rect(0, 0, 3, 5))
	for i := range gray.Pix {
		gray.Pix[i] = 90
	}
	dir := makeFolder(t, map[string][]byte{
		"zebra/a.png":      pngBytes(t, solidImage(4, 4, red)),
		"apple/b.jpg":      jpegBytes(t, solidImage(8, 6, blue)),
		"apple/deep/c.png": pngBytes(t, gray),        // nested: still class apple
		"apple/.DS_Store":  []byte("junk"),           // hidden: skipped
		".git/config":      []byte("hidden folder"),  // hidden class folder: skipped
		"zebra/.hidden/x":  []byte("hidden sub dir"), // skipped
	})
	t.Run("rgb", func(t *testing.T) {
		m, err := LoadImageFolder(dir, FolderOptions{C: 3, H: 2, W: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(m.ClassNames(), ","); got != "apple,zebra" {
			t.Fatalf("classes %q, want apple,zebra", got)
		}
		if m.Len() != 3 {
			t.Fatalf("%d samples, want 3", m.Len())
		}
		// Order: class apple (b.jpg, deep/c.png), then zebra (a.png).
		wantLabels := []int32{0, 0, 1}
		wantRGB := [][3]float64{{0, 0, 250}, {90, 90, 90}, {200, 0, 0}}
		dst := make([]float32, 12)
		for i := range 3 {
			if l := m.Get(i, dst); l != wantLabels[i] {
				t.Errorf("sample %d label %d, want %d", i, l, wantLabels[i])
			}
			for ch := range 3 {
				want := (wantRGB[i][ch]/255 - 0.5) / 0.5
				tol := 1e-6
				if i == 0 {
					tol = 3.0 / 255 * 2 // JPEG at quality 100 is still lossy
				}
				for j := range 4 {
					if got := float64(dst[ch*4+j]); got < want-tol || got > want+tol {
						t.Errorf("sample %d channel %d pixel %d = %v, want %v", i, ch, j, got, want)
					}
				}
			}
		}
	})
	t.Run("gray", func(t *testing.T) {
		m, err := LoadImageFolder(dir, FolderOptions{C: 1, H: 3, W: 3, Mean: []float32{0}, Std: []float32{1}})
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, 9)
		m.Get(2, dst) // red 200: luma 0.299*200 = 59.8 -> byte 60
		if want := float32(60.0 / 255); dst[4] != want {
			t.Errorf("luma of red = %v, want %v", dst[4], want)
		}
		m.Get(1, dst) // gray stays gray
		if want := float32(90.0 / 255); dst[0] != want {
			t.Errorf("luma of gray 90 = %v, want %v", dst[0], want)
		}
	})
}

func TestLoadImageFolderErrors(t *testing.T) {
	okPNG := pngBytes(t, solidImage(2, 2, color.NRGBA{1, 2, 3, 255}))
	tests := []struct {
		name  string
		files map[string][]byte
		opt   FolderOptions
		kind  error
		want  string // substring; "{dir}" is replaced by the folder
	}{
		{"text file", map[string][]byte{"a/x.png": okPNG, "a/notes.txt": []byte("hello")}, FolderOptions{C: 1, H: 2, W: 2},
			ErrFormat, "notes.txt: not a PNG or JPEG image"},
		{"corrupt png", map[string][]byte{"a/x.png": okPNG[:20]}, FolderOptions{C: 1, H: 2, W: 2},
			ErrFormat, "x.png: png:"},
		{"file outside class", map[string][]byte{"a/x.png": okPNG, "README": []byte("hi")}, FolderOptions{C: 1, H: 2, W: 2},
			ErrInvalid, "README is not in a class sub-folder"},
		{"no classes", map[string][]byte{".keep": nil}, FolderOptions{C: 1, H: 2, W: 2},
			ErrInvalid, "has no class sub-folders"},
		{"no images", map[string][]byte{"a/.keep": nil}, FolderOptions{C: 1, H: 2, W: 2},
			ErrInvalid, "holds no images"},
		{"bad channels", map[string][]byte{"a/x.png": okPNG}, FolderOptions{C: 2, H: 2, W: 2},
			ErrInvalid, "C = 2"},
		{"bad size", map[string][]byte{"a/x.png": okPNG}, FolderOptions{C: 1, H: 0, W: 2},
			ErrInvalid, "size 0x2"},
		{"mean count", map[string][]byte{"a/x.png": okPNG}, FolderOptions{C: 3, H: 2, W: 2, Mean: []float32{0.5}, Std: []float32{0.5}},
			ErrInvalid, "1 means and 1 stds, want 3"},
		{"zero std", map[string][]byte{"a/x.png": okPNG}, FolderOptions{C: 1, H: 2, W: 2, Mean: []float32{0.5}, Std: []float32{0}},
			ErrInvalid, "std[0] = 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := makeFolder(t, tt.files)
			_, err := LoadImageFolder(dir, tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.kind, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "data: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
	if _, err := LoadImageFolder(filepath.Join(t.TempDir(), "missing"), FolderOptions{C: 1, H: 1, W: 1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: err = %v, want ErrNotExist", err)
	}
}

func TestResizeAA(t *testing.T) {
	tests := []struct {
		name           string
		src            []float32
		sh, sw, dh, dw int
		want           []uint8
	}{
		{"identity", []float32{1, 2, 3, 4, 5, 6}, 2, 3, 2, 3, []uint8{1, 2, 3, 4, 5, 6}},
		// Upscale 1x2 -> 1x4: centres at source 0.5, 1, 1.5, 2 (pixel
		// centres at 0.5 and 1.5); the outer ones lose their weight outside
		// the image and renormalise to the edge pixel.
		{"up 2x", []float32{0, 100}, 1, 2, 1, 4, []uint8{0, 25, 75, 100}},
		// Downscale 1x4 -> 1x2: the triangle spans 2 pixels each side, so
		// output 0 (centre 1) weighs pixels 0, 1, 2 as 3/8, 3/8, 1/8 after
		// renormalising at the edge: (0·3 + 100·3 + 200·1)/7; output 1
		// (centre 3) weighs pixels 1, 2, 3 as 1/7, 3/7, 3/7.
		{"down 2x", []float32{0, 100, 200, 250}, 1, 4, 1, 2, []uint8{71, 207}},
		{"constant 3x5 -> 4x2", []float32{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, 3, 5, 4, 2, []uint8{7, 7, 7, 7, 7, 7, 7, 7}},
		// Shrinking to one pixel averages every pixel (a 2-pixel triangle
		// centred on the middle: equal weights here), then rounds and clamps.
		{"mean and clamp", []float32{254.6, 300}, 1, 2, 1, 1, []uint8{255}},
		{"mean", []float32{10, 20}, 1, 2, 1, 1, []uint8{15}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]uint8, tt.dh*tt.dw)
			resizeAA(dst, tt.dh, tt.dw, tt.src, tt.sh, tt.sw)
			if !bytes.Equal(dst, tt.want) {
				t.Errorf("got %v, want %v", dst, tt.want)
			}
		})
	}
}

func TestLoadImageMatchesFolder(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 5, 3))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 37)
	}
	for i := 3; i < len(src.Pix); i += 4 {
		src.Pix[i] = 255
	}
	dir := makeFolder(t, map[string][]byte{"only/x.png": pngBytes(t, src), "bad/y.png": []byte("GIF89a")})
	opt := FolderOptions{C: 3, H: 4, W: 2, Mean: []float32{0.1, 0.2, 0.3}, Std: []float32{0.4, 0.5, 0.6}}
	got, err := LoadImage(filepath.Join(dir, "only", "x.png"), opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "bad", "y.png")); err != nil {
		t.Fatal(err)
	}
	m, err := LoadImageFolder(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 3*4*2)
	m.Get(0, want)
	if !slices.Equal(got, want) {
		t.Errorf("LoadImage = %v\nfolder    = %v", got, want)
	}
	_, err = LoadImage(filepath.Join(dir, "only"), opt)
	if err == nil {
		t.Error("LoadImage of a folder: err = nil")
	}
	gif := filepath.Join(t.TempDir(), "y.gif")
	if err := os.WriteFile(gif, []byte("GIF89a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadImage(gif, opt); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "y.gif: not a PNG or JPEG") {
		t.Errorf("LoadImage of a GIF: err = %v", err)
	}
	if _, err := LoadImage(gif, FolderOptions{C: 4, H: 1, W: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("LoadImage with C=4: err = %v, want ErrInvalid", err)
	}
}
