package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idxBytes builds an IDX file: magic 00 00 typ ndims, dims, then body.
func idxBytes(typ byte, dims []uint32, body []byte) []byte {
	b := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, body...)
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyIDX returns 3 images of 2×2 (pixel bytes 0..11) and labels 7, 0, 9.
func tinyIDX() (images, labels []byte) {
	pix := make([]byte, 12)
	for i := range pix {
		pix[i] = byte(i * 20)
	}
	return idxBytes(8, []uint32{3, 2, 2}, pix), idxBytes(8, []uint32{3}, []byte{7, 0, 9})
}

func TestLoadIDXGzipAndRaw(t *testing.T) {
	img, lab := tinyIDX()
	for _, zip := range []bool{false, true} {
		dir := t.TempDir()
		i, l := img, lab
		if zip {
			i, l = gz(t, img), gz(t, lab)
		}
		m, err := LoadIDX(writeFile(t, dir, "img", i), writeFile(t, dir, "lab", l))
		if err != nil {
			t.Fatalf("gzip %v: %v", zip, err)
		}
		if c, h, w := m.Shape(); m.Len() != 3 || c != 1 || h != 2 || w != 2 || m.Classes() != 10 {
			t.Fatalf("gzip %v: len %d shape %dx%dx%d classes %d", zip, m.Len(), c, h, w, m.Classes())
		}
		dst := make([]float32, 4)
		if got := m.Get(2, dst); got != 9 {
			t.Errorf("gzip %v: label 2 = %d, want 9", zip, got)
		}
		// The table uses the float32 statistics, widened to float64.
		want := float32((float64(8*20)/255 - float64(float32(MNISTMean))) / float64(float32(MNISTStd)))
		if dst[0] != want {
			t.Errorf("gzip %v: pixel = %v, want %v", zip, dst[0], want)
		}
	}
}

func TestLoadIDXErrors(t *testing.T) {
	img, lab := tinyIDX()
	tests := []struct {
		name       string
		img, lab   []byte
		classes    int
		badFile    string // "img" or "lab": the file the error must name
		kind       error
		wantSubstr string
	}{
		{"bad magic", append([]byte{1}, img[1:]...), lab, 10, "img", ErrFormat, "bad magic"},
		{"float type", idxBytes(0x0d, []uint32{3, 2, 2}, make([]byte, 48)), lab, 10, "img", ErrFormat, "bad magic"},
		{"images with 2 dims", idxBytes(8, []uint32{3, 4}, make([]byte, 12)), lab, 10, "img", ErrFormat, "2 dimensions, want 3"},
		{"labels with 2 dims", img, idxBytes(8, []uint32{3, 1}, []byte{1, 2, 3}), 10, "lab", ErrFormat, "2 dimensions, want 1"},
		{"images truncated", img[:len(img)-1], lab, 10, "img", ErrFormat, "truncated: 11 bytes of data, header promises 12"},
		{"images truncated gzip", gz(t, img[:len(img)-5]), lab, 10, "img", ErrFormat, "truncated"},
		{"labels truncated", img, lab[:len(lab)-1], 10, "lab", ErrFormat, "truncated: 2 bytes"},
		{"header cut", img[:6], lab, 10, "img", ErrFormat, "truncated in dimensions"},
		{"empty file", []byte{}, lab, 10, "img", ErrFormat, "truncated header"},
		{"trailing bytes", append(append([]byte{}, img...), 0), lab, 10, "img", ErrFormat, "more bytes than the header promises"},
		{"zero dimension", idxBytes(8, []uint32{3, 0, 2}, nil), lab, 10, "img", ErrFormat, "dimension 1 is 0"},
		{"huge header", idxBytes(8, []uint32{1 << 20, 1 << 10, 1 << 10}, nil), lab, 10, "img", ErrFormat, "promises more than"},
		{"count mismatch", img, idxBytes(8, []uint32{2}, []byte{1, 2}), 10, "lab", ErrInvalid, "2 labels but"},
		{"label out of range", img, lab, 9, "lab", ErrInvalid, "label 9 of sample 2 out of range [0,9)"},
		{"corrupt gzip", []byte{0x1f, 0x8b, 0, 0}, lab, 10, "img", ErrFormat, "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ip, lp := writeFile(t, dir, "images.idx", tt.img), writeFile(t, dir, "labels.idx", tt.lab)
			_, err := LoadIDXClasses(ip, lp, tt.classes)
			if err == nil {
				t.Fatal("err = nil")
			}
			named := map[string]string{"img": ip, "lab": lp}[tt.badFile]
			msg := err.Error()
			if !strings.Contains(msg, named) || !strings.Contains(msg, tt.wantSubstr) || !strings.HasPrefix(msg, "data: ") {
				t.Errorf("err = %q, want it to name %s and say %q", msg, named, tt.wantSubstr)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.kind)
			}
		})
	}
}

func TestLoadIDXMissingFile(t *testing.T) {
	dir := t.TempDir()
	_, lab := tinyIDX()
	_, err := LoadIDX(filepath.Join(dir, "nope"), writeFile(t, dir, "lab", lab))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("err = %v, want a not-exist error naming the file", err)
	}
	if _, err := LoadIDXClasses("a", "b", 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("0 classes: err = %v, want ErrInvalid", err)
	}
}

// oneByteReader returns one byte per Read, to exercise readExactly's loop.
type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, errors.New("EOF never comes")
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], r.b = r.b[0], r.b[1:]
	return 1, nil
}

func TestReadIDXReaderErrorsAndSlowReads(t *testing.T) {
	img, _ := tinyIDX()
	_, _, err := ReadIDX(&oneByteReader{b: img}, 3)
	// The reader never says EOF, so checking for trailing bytes fails with
	// its error, which must be reported rather than swallowed.
	if err == nil || !strings.Contains(err.Error(), "EOF never comes") {
		t.Fatalf("err = %v, want the reader's error", err)
	}
	b, dims, err := ReadIDX(bytes.NewReader(img), 3)
	if err != nil || len(b) != 12 || dims[0] != 3 || dims[1] != 2 || dims[2] != 2 {
		t.Fatalf("ReadIDX = %d bytes, %v, %v", len(b), dims, err)
	}
}
