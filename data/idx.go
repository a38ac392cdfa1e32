package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// IDX is the format of the MNIST files (http://yann.lecun.com/exdb/mnist/):
// two zero bytes, a type byte (0x08 = unsigned byte, the only one read here),
// a dimension count, then one big-endian uint32 per dimension and the data.
// Images have 3 dimensions (n, rows, cols), labels 1 (n).
const (
	idxUbyte     = 0x08
	maxIDXBytes  = min(1<<31, math.MaxInt) // refuse headers that promise more than 2 GiB (a byte less on 32-bit, where ints stop there)
	initialChunk = 1 << 20                 // allocate past 1 MiB only as bytes arrive
)

// MNIST normalisation: the training set's pixel mean and standard deviation
// on the [0,1] scale (the values PyTorch examples use).
const (
	MNISTMean = 0.1307
	MNISTStd  = 0.3081
)

// LoadIDX reads an IDX image file (n×rows×cols unsigned bytes) and an IDX
// label file (n unsigned bytes, each < 10), gzipped or raw (detected by the
// gzip magic), into a 1×rows×cols data set of 10 classes normalised like
// MNIST ((x/255 - 0.1307)/0.3081). Use Images.WithNorm for other statistics
// and LoadIDXClasses for label sets other than 10 classes.
func LoadIDX(imagesPath, labelsPath string) (*Images, error) {
	return LoadIDXClasses(imagesPath, labelsPath, 10)
}

// LoadIDXClasses is LoadIDX with labels in [0, classes).
//
// Every error names the file and what is wrong: bad magic, a dimension count
// other than 3 (images) or 1 (labels), fewer or more bytes than the header
// promises, label count differing from image count, a label out of range.
// Format errors match ErrFormat and inconsistencies ErrInvalid (errors.Is).
func LoadIDXClasses(imagesPath, labelsPath string, classes int) (*Images, error) {
	if classes < 1 || classes > 256 {
		return nil, errorf(ErrInvalid, "data: %d classes, want 1..256 for byte labels", classes)
	}
	pix, dims, err := readIDXFile(imagesPath, 3)
	if err != nil {
		return nil, err
	}
	lab, ldims, err := readIDXFile(labelsPath, 1)
	if err != nil {
		return nil, err
	}
	if ldims[0] != dims[0] {
		return nil, errorf(ErrInvalid, "data: idx: %s has %d labels but %s has %d images",
			labelsPath, ldims[0], imagesPath, dims[0])
	}
	labels := make([]int32, len(lab))
	for i, l := range lab {
		if int(l) >= classes {
			return nil, errorf(ErrInvalid, "data: idx: %s: label %d of sample %d out of range [0,%d)",
				labelsPath, l, i, classes)
		}
		labels[i] = int32(l)
	}
	m, err := NewImages(pix, labels, 1, dims[1], dims[2], classes,
		[]float32{MNISTMean}, []float32{MNISTStd}, nil)
	if err != nil {
		return nil, fmt.Errorf("data: idx: %s: %w", imagesPath, err)
	}
	return m, nil
}

// readIDXFile opens path and decodes one IDX unsigned-byte array of wantDims
// dimensions, prefixing errors with the path.
func readIDXFile(path string, wantDims int) ([]uint8, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("data: idx: %w", err)
	}
	defer f.Close()
	r, err := maybeGunzip(f)
	if err != nil {
		return nil, nil, errorf(ErrFormat, "data: idx: %s: gzip: %v", path, err)
	}
	b, dims, err := readIDX(r, wantDims)
	if err != nil {
		return nil, nil, fmt.Errorf("data: idx: %s: %w", path, err)
	}
	return b, dims, nil
}

// maybeGunzip returns a reader of r's decompressed bytes when r starts with
// the gzip magic (1f 8b), else of r's bytes as they are.
func maybeGunzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// ReadIDX decodes one uncompressed IDX array of unsigned bytes with exactly
// wantDims dimensions from r and returns its bytes and dimensions. It reads
// r to the end: bytes beyond what the header promises are an error, as are
// fewer. It never allocates much more than the bytes actually present, so
// it is safe on untrusted input.
func ReadIDX(r io.Reader, wantDims int) ([]uint8, []int, error) {
	b, dims, err := readIDX(r, wantDims)
	if err != nil {
		return nil, nil, fmt.Errorf("data: idx: %w", err)
	}
	return b, dims, nil
}

// readIDX is ReadIDX with unprefixed errors.
func readIDX(r io.Reader, wantDims int) ([]uint8, []int, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, nil, errorf(ErrFormat, "truncated header: %v", err)
	}
	if hdr[0] != 0 || hdr[1] != 0 || hdr[2] != idxUbyte {
		return nil, nil, errorf(ErrFormat, "bad magic % x, want 00 00 08 (IDX of unsigned bytes)", hdr[:3])
	}
	if int(hdr[3]) != wantDims {
		return nil, nil, errorf(ErrFormat, "%d dimensions, want %d", hdr[3], wantDims)
	}
	dimBytes := make([]byte, 4*wantDims)
	if _, err := io.ReadFull(r, dimBytes); err != nil {
		return nil, nil, errorf(ErrFormat, "truncated in dimensions: %v", err)
	}
	dims := make([]int, wantDims)
	total := int64(1)
	for i := range dims {
		d := int64(binary.BigEndian.Uint32(dimBytes[4*i:]))
		if d == 0 {
			return nil, nil, errorf(ErrFormat, "dimension %d is 0", i)
		}
		total *= d
		if total > maxIDXBytes {
			return nil, nil, errorf(ErrFormat, "header promises more than %d bytes", int64(maxIDXBytes))
		}
		dims[i] = int(d)
	}
	b, err := readExactly(r, total)
	if err != nil {
		return nil, nil, err
	}
	return b, dims, nil
}

// readExactly reads exactly n bytes from r and checks that r then ends. The
// buffer starts at 1 MiB at most and doubles as bytes arrive, so a header
// that lies about its size cannot make us allocate gigabytes for a small
// file; reading MNIST's 47 MB copies about as much again, once.
// Errors are unprefixed and match ErrFormat.
func readExactly(r io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, 0, min(n, initialChunk))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			// Double, but never past n: the last buffer is exactly n
			// bytes, so no spare capacity outlives the read.
			grown := make([]byte, len(buf), min(n, 2*int64(cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		end := min(int64(cap(buf)), n)
		k, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+k]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// A gzip stream cut short reports ErrUnexpectedEOF.
			if int64(len(buf)) < n {
				return nil, errorf(ErrFormat, "truncated: %d bytes of data, header promises %d", len(buf), n)
			}
			if errors.Is(err, io.EOF) {
				break
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, errorf(ErrFormat, "reading data after %d of %d bytes: %v", len(buf), n, err)
		}
	}
	var one [1]byte
	k, err := io.ReadFull(r, one[:])
	if k > 0 {
		return nil, errorf(ErrFormat, "more bytes than the header promises (%d)", n)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errorf(ErrFormat, "reading past data: %v", err)
	}
	return buf, nil
}
