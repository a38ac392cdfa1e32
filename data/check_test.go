package data

import (
	"errors"
	"image/color"
	"strings"
	"testing"
)

// CheckImageFolder decodes every image, reports progress for each, and
// names the first file that does not decode (a truncated JPEG here), the
// way a worker needs it before it registers.
func TestCheckImageFolder(t *testing.T) {
	red := solidImage(8, 6, color.NRGBA{R: 255, A: 255})
	good := map[string][]byte{
		"cat/a.png": pngBytes(t, red),
		"cat/b.jpg": jpegBytes(t, red),
		"dog/c.png": pngBytes(t, red),
	}
	var calls [][2]int
	n, err := CheckImageFolder(makeFolder(t, good), 0, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	if err != nil || n != 3 {
		t.Fatalf("CheckImageFolder of 3 good images: %d, %v", n, err)
	}
	if len(calls) != 3 || calls[2] != [2]int{3, 3} || calls[0] != [2]int{1, 3} {
		t.Errorf("progress calls %v, want (1,3) (2,3) (3,3)", calls)
	}

	broken := map[string][]byte{
		"cat/a.png": pngBytes(t, red),
		"dog/b.jpg": jpegBytes(t, red)[:40], // cut short: jpeg: unexpected EOF
	}
	n, err = CheckImageFolder(makeFolder(t, broken), 0, nil)
	if err == nil || !strings.Contains(err.Error(), "b.jpg") || !errors.Is(err, ErrFormat) {
		t.Fatalf("CheckImageFolder with a truncated JPEG: %d, %v; want an ErrFormat naming b.jpg", n, err)
	}
	if n != 1 {
		t.Errorf("checked %d images before the broken one, want 1", n)
	}
	// Held to the pixel limit, as LoadImageFolder is: 8×6 is over 40.
	if _, err := CheckImageFolder(makeFolder(t, good), 40, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("CheckImageFolder over --max-pixels: %v; want ErrTooLarge", err)
	}
	if _, err := CheckImageFolder(makeFolder(t, map[string][]byte{"cat/.DS_Store": []byte("x")}), 0, nil); err == nil {
		t.Error("a folder with no images: no error")
	}
}
