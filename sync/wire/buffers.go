package wire

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// frameBuf is the Writer's growing output buffer. It is the msgpack
// encoder's writer, and Floats recognise it to convert straight into it.
type frameBuf struct{ b []byte }

// Write implements io.Writer; it never fails.
func (f *frameBuf) Write(p []byte) (int, error) {
	f.b = append(f.b, p...)
	return len(p), nil
}

// WriteByte implements io.ByteWriter, which msgpack's encoder wants.
func (f *frameBuf) WriteByte(c byte) error {
	f.b = append(f.b, c)
	return nil
}

// WriteString implements io.StringWriter.
func (f *frameBuf) WriteString(s string) (int, error) {
	f.b = append(f.b, s...)
	return len(s), nil
}

// grow appends n bytes and returns them for the caller to fill.
func (f *frameBuf) grow(n int) []byte {
	k := len(f.b)
	f.b = slices.Grow(f.b, n)[:k+n]
	return f.b[k:]
}

// bodyReader reads a frame body held in memory. It is the msgpack decoder's
// reader (an io.ByteScanner, so the decoder adds no buffering of its own),
// and Floats recognise it to convert straight from the body.
type bodyReader struct {
	b   []byte
	off int
}

// Read implements io.Reader.
func (r *bodyReader) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

// ReadByte implements io.ByteReader.
func (r *bodyReader) ReadByte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

// UnreadByte implements io.ByteScanner.
func (r *bodyReader) UnreadByte() error {
	if r.off == 0 {
		return errors.New("wire: UnreadByte at the start of the body")
	}
	r.off--
	return nil
}

// Len returns the number of unread bytes.
func (r *bodyReader) Len() int { return len(r.b) - r.off }

// next returns the next n bytes of the body, without copying.
func (r *bodyReader) next(n int) ([]byte, error) {
	if n < 0 || n > r.Len() {
		return nil, fmt.Errorf("wire: %d bytes wanted, %d remain: %w", n, r.Len(), io.ErrUnexpectedEOF)
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p, nil
}
