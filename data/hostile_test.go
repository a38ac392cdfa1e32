package data

import (
	"errors"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/internal/pngbomb"
)

// TestPNGBomb: issue 28's 16000×16000 PNG of 249 KB is refused from its
// header, as a single input and in an image folder (the old loader decoded
// it: 1.28 GB for finetune; its 30000×30000 sibling took predict to 4.4 GB).
// A limit raised above it decodes it.
func TestPNGBomb(t *testing.T) {
	bomb := pngbomb.PNG(16000, 16000)
	if len(bomb) > 300<<10 {
		t.Fatalf("the bomb takes %d bytes", len(bomb))
	}
	dir := makeFolder(t, map[string][]byte{"a/bomb.png": bomb, "b/ok.png": pngBytes(t, solidImage(4, 4, color.NRGBA{A: 255}))})
	opt := FolderOptions{C: 1, H: 28, W: 28}
	_, err := LoadImage(filepath.Join(dir, "a", "bomb.png"), opt)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "16000x16000") {
		t.Errorf("LoadImage: %v, want ErrTooLarge naming 16000x16000", err)
	}
	if _, err := LoadImageFolder(dir, opt); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "bomb.png") {
		t.Errorf("LoadImageFolder: %v, want ErrTooLarge naming bomb.png", err)
	}
	// A raised limit admits a bomb of 25 megapixels, over the default.
	small := pngbomb.PNG(5000, 5000)
	dir = makeFolder(t, map[string][]byte{"a/bomb.png": small})
	opt.MaxPixels = 0
	if _, err := LoadImage(filepath.Join(dir, "a", "bomb.png"), opt); !errors.Is(err, ErrTooLarge) {
		t.Errorf("25 MP under the default limit: %v, want ErrTooLarge", err)
	}
	opt.MaxPixels = 5000 * 5000
	if _, err := LoadImage(filepath.Join(dir, "a", "bomb.png"), opt); err != nil {
		t.Errorf("25 MP with the limit raised to it: %v", err)
	}
}

// TestImageSizeLimit: a model whose input is larger than any image read
// (issue 28: 1×(2^62+7)×4, panicking with makeslice in aaTaps; here
// MaxInt rows, which a 32-bit build can hold too) is refused before a
// buffer is made.
func TestImageSizeLimit(t *testing.T) {
	dir := makeFolder(t, map[string][]byte{"a/ok.png": pngBytes(t, solidImage(4, 4, color.NRGBA{A: 255}))})
	for _, opt := range []FolderOptions{{C: 1, H: math.MaxInt, W: 4}, {C: 3, H: 1 << 13, W: 1 << 12}, {C: 1, H: 28, W: 28, MaxPixels: 100}} {
		if _, err := LoadImage(filepath.Join(dir, "a", "ok.png"), opt); !errors.Is(err, ErrTooLarge) {
			t.Errorf("LoadImage to %dx%d (limit %d): %v, want ErrTooLarge", opt.H, opt.W, opt.MaxPixels, err)
		}
		if _, err := LoadImageFolder(dir, opt); !errors.Is(err, ErrTooLarge) {
			t.Errorf("LoadImageFolder to %dx%d: %v, want ErrTooLarge", opt.H, opt.W, err)
		}
	}
	// Over the pixel limit by the file's size alone: 4 bytes a pixel.
	big := append(pngBytes(t, solidImage(4, 4, color.NRGBA{A: 255})), make([]byte, 70000)...)
	dir = makeFolder(t, map[string][]byte{"a/big.png": big})
	if _, err := LoadImage(filepath.Join(dir, "a", "big.png"), FolderOptions{C: 1, H: 2, W: 2, MaxPixels: 16}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file over 4 bytes a pixel: %v, want ErrTooLarge", err)
	}
}

// TestFolderSymlinks: a link in an image folder to a file outside it
// (issue 28: /etc/passwd, followed, and its first 8 bytes printed) is
// refused without reading it; a link within the folder is followed; a
// file that is not an image is named, its bytes not printed.
func TestFolderSymlinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root:x:0:0:hunter2"), 0o600); err != nil {
		t.Fatal(err)
	}
	img := pngBytes(t, solidImage(4, 4, color.NRGBA{R: 9, A: 255}))
	dir := makeFolder(t, map[string][]byte{"a/ok.png": img, "b/ok.png": img})
	if err := os.Symlink(filepath.Join(dir, "a", "ok.png"), filepath.Join(dir, "b", "inside.png")); err != nil {
		t.Fatal(err)
	}
	opt := FolderOptions{C: 1, H: 4, W: 4}
	got, err := LoadImageFolder(dir, opt)
	if err != nil || got.Len() != 3 {
		t.Fatalf("a link within the folder: %v (%v samples)", err, got)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "a", "passwd.png")); err != nil {
		t.Fatal(err)
	}
	_, err = LoadImageFolder(dir, opt)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "passwd.png") || !strings.Contains(err.Error(), "out of the folder") {
		t.Errorf("a link out of the folder: %v, want ErrInvalid naming it", err)
	}
	if err != nil && (strings.Contains(err.Error(), "72 6f 6f 74") || strings.Contains(err.Error(), "root")) {
		t.Errorf("the error shows the file's content: %v", err)
	}
	// Not an image, inside the folder: named, its bytes not shown.
	os.Remove(filepath.Join(dir, "a", "passwd.png"))
	if err := os.WriteFile(filepath.Join(dir, "a", "notes.png"), []byte("root:x:0:0:hunter2"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadImageFolder(dir, opt)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "notes.png") || strings.Contains(err.Error(), "72 6f 6f 74") {
		t.Errorf("a text file: %v, want ErrFormat naming it without its bytes", err)
	}
}

// TestNonFiniteData: a normalisation that turns pixels into infinities (a
// subnormal std) is refused, so training never sees non-finite inputs;
// CheckFinite names the first NaN or infinity of a batch by sample and
// position.
func TestNonFiniteData(t *testing.T) {
	pix := make([]uint8, 2*4)
	pix[5] = 255
	if _, err := NewImages(pix, []int32{0, 1}, 1, 2, 2, 2, []float32{0}, []float32{1e-45}, nil); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "want finite values") {
		t.Errorf("std 1e-45: %v, want ErrInvalid", err)
	}
	x := make([]float32, 2*3*4*5)
	if err := CheckFinite(x, 3, 4, 5); err != nil {
		t.Fatal(err)
	}
	x[60+20+2*5+3] = float32(math.Inf(-1))
	err := CheckFinite(x, 3, 4, 5)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "element 93 (sample 1, channel 1, row 2, column 3) is -Inf") {
		t.Errorf("CheckFinite: %v", err)
	}
}
