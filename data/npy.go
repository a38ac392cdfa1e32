package data

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// NPY is NumPy's array file format
// (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// the magic "\x93NUMPY", a major and minor version byte, the header length
// (uint16 little-endian in version 1.0, uint32 in 2.0 and 3.0), then an
// ASCII (3.0: UTF-8) Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw data.
const (
	npyMagic    = "\x93NUMPY"
	npyAlign    = 64                      // numpy pads magic+header to a multiple of this
	maxNPYBytes = min(1<<31, math.MaxInt) // refuse headers that promise more than 2 GiB (a byte less on 32-bit)
	maxNPYHdr   = 1 << 20                 // refuse absurd header lengths
)

// ReadNPY reads one NPY array of little-endian float32 ('<f4') in C order,
// format version 1.0, 2.0 or 3.0, and returns its values and shape (a scalar
// has shape [] and one value). Other dtypes, Fortran order, bad headers and
// truncated data are errors matching ErrFormat; the message says what was
// found and how to convert it. Bytes after the data are left unread, so
// several arrays may follow each other in r.
func ReadNPY(r io.Reader) (data []float32, shape []int, err error) {
	data, shape, err = readNPY(r)
	if err != nil {
		return nil, nil, fmt.Errorf("data: npy: %w", err)
	}
	return data, shape, nil
}

// readNPY is ReadNPY with unprefixed errors.
func readNPY(r io.Reader) ([]float32, []int, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, nil, errorf(ErrFormat, "truncated preamble: %v", err)
	}
	if string(pre[:6]) != npyMagic {
		return nil, nil, errorf(ErrFormat, "bad magic %q, want %q", pre[:6], npyMagic)
	}
	var hlen int
	switch major := pre[6]; major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, nil, errorf(ErrFormat, "truncated header length: %v", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, nil, errorf(ErrFormat, "truncated header length: %v", err)
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > maxNPYHdr {
			return nil, nil, errorf(ErrFormat, "header length %d exceeds %d", n, maxNPYHdr)
		}
		hlen = int(n)
	default:
		return nil, nil, errorf(ErrFormat, "format version %d.%d, want 1.0, 2.0 or 3.0", major, pre[7])
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, nil, errorf(ErrFormat, "truncated header (%d bytes promised): %v", hlen, err)
	}
	descr, fortran, shape, err := parseNPYHeader(string(hdr))
	if err != nil {
		return nil, nil, errorf(ErrFormat, "header %q: %v", strings.TrimSpace(string(hdr)), err)
	}
	if descr != "<f4" {
		return nil, nil, errorf(ErrFormat, "dtype %q not supported, want '<f4' "+
			"(little-endian float32; convert with arr.astype('<f4'))", descr)
	}
	if fortran {
		return nil, nil, errorf(ErrFormat, "Fortran-order array not supported, want C order "+
			"(convert with np.ascontiguousarray(arr))")
	}
	count := int64(1)
	for _, d := range shape {
		count *= int64(d)
		if count*4 > maxNPYBytes {
			return nil, nil, errorf(ErrFormat, "shape %v promises more than %d bytes", shape, int64(maxNPYBytes))
		}
	}
	// Read exactly the data, growing as it arrives, without requiring r to
	// end afterwards.
	raw, err := readExactly(io.LimitReader(r, count*4), count*4)
	if err != nil {
		return nil, nil, err
	}
	data := make([]float32, count)
	for i := range data {
		data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return data, shape, nil
}

// parseNPYHeader reads the three keys of an NPY header dict. It accepts
// exactly the Python literal syntax numpy writes: string keys, a string
// descr, True/False, and a tuple of non-negative integers.
func parseNPYHeader(h string) (descr string, fortran bool, shape []int, err error) {
	p := &pyLexer{s: h}
	if !p.eat('{') {
		return "", false, nil, fmt.Errorf("want '{' at %d", p.i)
	}
	seen := map[string]bool{}
	for !p.eat('}') {
		key, err := p.str()
		if err != nil {
			return "", false, nil, err
		}
		if !p.eat(':') {
			return "", false, nil, fmt.Errorf("want ':' after key %q", key)
		}
		switch key {
		case "descr":
			if descr, err = p.str(); err != nil {
				return "", false, nil, fmt.Errorf("descr: %w", err)
			}
		case "fortran_order":
			if fortran, err = p.boolean(); err != nil {
				return "", false, nil, err
			}
		case "shape":
			if shape, err = p.tuple(); err != nil {
				return "", false, nil, err
			}
		default:
			return "", false, nil, fmt.Errorf("unknown key %q", key)
		}
		seen[key] = true
		if !p.eat(',') && p.peek() != '}' {
			return "", false, nil, fmt.Errorf("want ',' or '}' at %d", p.i)
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return "", false, nil, fmt.Errorf("missing key %q", k)
		}
	}
	return descr, fortran, shape, nil
}

// pyLexer scans the small subset of Python literals NPY headers use.
type pyLexer struct {
	s string
	i int
}

func (p *pyLexer) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *pyLexer) peek() byte {
	p.skip()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *pyLexer) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *pyLexer) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", fmt.Errorf("want a string at %d", p.i)
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at %d", p.i)
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

func (p *pyLexer) boolean() (bool, error) {
	p.skip()
	for _, w := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			return w == "True", nil
		}
	}
	return false, fmt.Errorf("want True or False at %d", p.i)
}

func (p *pyLexer) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, fmt.Errorf("want '(' for shape at %d", p.i)
	}
	shape := []int{}
	for !p.eat(')') {
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		d, err := strconv.Atoi(p.s[p.i:j])
		if err != nil || d > math.MaxInt32 {
			return nil, fmt.Errorf("want a dimension at %d", p.i)
		}
		shape = append(shape, d)
		p.i = j
		if !p.eat(',') && p.peek() != ')' {
			return nil, fmt.Errorf("want ',' or ')' in shape at %d", p.i)
		}
	}
	return shape, nil
}

// WriteNPY writes data as one NPY array of little-endian float32 in C order
// with the given shape, the way numpy.save does: format version 1.0 when the
// header fits in 65,535 bytes (else 2.0), padded so the data starts at a
// multiple of 64 bytes. It is an error for the shape to have a negative
// dimension or a product other than len(data).
func WriteNPY(w io.Writer, data []float32, shape []int) error {
	count := 1
	for _, d := range shape {
		if d < 0 {
			return errorf(ErrInvalid, "data: npy: negative dimension in shape %v", shape)
		}
		count *= d
	}
	if count != len(data) {
		return errorf(ErrInvalid, "data: npy: shape %v holds %d values, have %d", shape, count, len(data))
	}
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': " + tuple + ", }"
	var buf bytes.Buffer
	buf.WriteString(npyMagic)
	lenBytes := 2
	if len(dict)+1+len(npyMagic)+2+2 > math.MaxUint16 {
		lenBytes = 4
	}
	// Pad with spaces so that magic, version, length and header end on a
	// multiple of npyAlign, the header ending in '\n'.
	fixed := len(npyMagic) + 2 + lenBytes
	hlen := len(dict) + 1
	hlen += (npyAlign - (fixed+hlen)%npyAlign) % npyAlign
	if lenBytes == 2 {
		buf.Write([]byte{1, 0})
		buf.Write(binary.LittleEndian.AppendUint16(nil, uint16(hlen)))
	} else {
		buf.Write([]byte{2, 0})
		buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(hlen)))
	}
	buf.WriteString(dict)
	buf.WriteString(strings.Repeat(" ", hlen-len(dict)-1))
	buf.WriteByte('\n')
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("data: npy: %w", err)
	}
	out := make([]byte, 0, 4*min(len(data), 1<<16))
	for i := 0; i < len(data); i += 1 << 16 {
		out = out[:0]
		for _, v := range data[i:min(len(data), i+1<<16)] {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
		if _, err := w.Write(out); err != nil {
			return fmt.Errorf("data: npy: %w", err)
		}
	}
	return nil
}
