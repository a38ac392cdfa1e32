package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// Floats is a float32 vector that travels as raw little-endian bytes: a
// msgpack bin of 4·n bytes, about 4 bytes per value on the wire, rather than
// an array of msgpack floats (5 bytes per value, and slow to walk). A nil
// Floats travels as msgpack nil and decodes as nil; an empty one as an empty
// bin.
//
// Decoding into a Floats whose capacity suffices reuses its backing array
// (see Reader.ReadMessage). The length that arrives is whatever the peer
// sent: the receiver must check it against the model (CheckLen).
type Floats []float32

// CheckLen returns nil if f holds want values, and otherwise an error
// wrapping ErrLength that names the vector, for example
// CheckLen("gradient", 431080).
func (f Floats) CheckLen(name string, want int) error {
	if len(f) != want {
		return fmt.Errorf("%w: %s has %d values, the model has %d", ErrLength, name, len(f), want)
	}
	return nil
}

// chunk is the size of the stack buffer used when Floats are encoded to or
// decoded from a stream other than this package's own buffers.
const chunk = 4096

// EncodeMsgpack implements msgpack.CustomEncoder.
func (f Floats) EncodeMsgpack(enc *msgpack.Encoder) error {
	if f == nil {
		return enc.EncodeNil()
	}
	n, err := binLen(len(f))
	if err != nil {
		return err
	}
	if err := enc.EncodeBytesLen(n); err != nil {
		return err
	}
	if c, ok := enc.Writer().(*sizeCount); ok {
		*c += sizeCount(n) // a Sizer: counted, not written
		return nil
	}
	if fb, ok := enc.Writer().(*frameBuf); ok {
		// Fast path: convert straight into the frame buffer, no copy.
		putFloats(fb.grow(n), f)
		return nil
	}
	var buf [chunk]byte
	w := enc.Writer()
	for len(f) > 0 {
		m := min(len(f), chunk/4)
		putFloats(buf[:4*m], f[:m])
		if _, err := w.Write(buf[:4*m]); err != nil {
			return err
		}
		f = f[m:]
	}
	return nil
}

// maxBin is the most bytes one float vector may take on the wire from this
// build: a msgpack bin holds up to 4 GiB, and on a 32-bit platform (int of
// 32 bits) byte counts stop at 2 GiB.
const maxBin = min(math.MaxUint32, math.MaxInt)

// binLen returns the bytes of a bin holding n floats, or ErrTooLarge when
// that is over maxBin. It counts in uint64 so that 4·n cannot overflow.
func binLen(n int) (int, error) {
	b := 4 * uint64(n)
	if b > maxBin {
		return 0, fmt.Errorf("%w: a vector of %d values takes %d bytes, over the %d a bin holds here", ErrTooLarge, n, b, uint64(maxBin))
	}
	return int(b), nil
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (f *Floats) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return err
	}
	if n == -1 { // msgpack nil
		*f = nil
		return nil
	}
	if n < 0 {
		// A bin32 length over 2 GiB, wrapped by a 32-bit int.
		return fmt.Errorf("%w: a float vector of more bytes than this build can count", ErrTooLarge)
	}
	if n%4 != 0 {
		return fmt.Errorf("wire: a float vector of %d bytes is not a multiple of 4", n)
	}
	if br, ok := dec.Buffered().(*bodyReader); ok {
		// Fast path: the whole body is in memory and was checked by
		// validate, so n bytes are there; convert without a copy.
		src, err := br.next(n)
		if err != nil {
			return err
		}
		*f = slices.Grow(nonNil(*f), n/4)[:n/4]
		getFloats(*f, src)
		return nil
	}
	// Any other reader: its length is unknown, so grow as bytes arrive
	// rather than trusting n.
	out := nonNil(*f)
	var buf [chunk]byte
	for n > 0 {
		m := min(n, chunk)
		if err := dec.ReadFull(buf[:m]); err != nil {
			return err
		}
		k := len(out)
		out = slices.Grow(out, m/4)[:k+m/4]
		getFloats(out[k:], buf[:m])
		n -= m
	}
	*f = out
	return nil
}

// nonNil returns f emptied, keeping its array, and an empty non-nil vector
// when f is nil: a bin decodes as non-nil even when it is empty.
func nonNil(f Floats) Floats {
	if f == nil {
		return Floats{}
	}
	return f[:0]
}

// putFloats writes src into dst (4·len(src) bytes) as little-endian float32.
// On a little-endian machine (amd64, arm64) that is the floats' own memory,
// copied as bytes: a third of the time of the conversion loop.
func putFloats(dst []byte, src []float32) {
	dst = dst[:4*len(src)]
	if littleEndian {
		copy(dst, floatBytes(src))
		return
	}
	putFloatsLoop(dst, src)
}

// putFloatsLoop is putFloats one value at a time, for any byte order.
func putFloatsLoop(dst []byte, src []float32) {
	dst = dst[:4*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:4*i+4], math.Float32bits(v))
	}
}

// getFloats reads len(dst) little-endian float32 from src.
func getFloats(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	if littleEndian {
		copy(floatBytes(dst), src)
		return
	}
	getFloatsLoop(dst, src)
}

// getFloatsLoop is getFloats one value at a time, for any byte order.
func getFloatsLoop(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
	}
}

// littleEndian is true when float32s are laid out in memory as the wire
// lays them out.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// floatBytes is v's memory as bytes.
func floatBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// Hash is a 32-byte digest (of the weights). It travels as a bin of 32 bytes;
// the zero Hash travels as nil and means "no hash".
type Hash [32]byte

// IsZero reports whether h is the zero Hash.
func (h Hash) IsZero() bool { return h == Hash{} }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (h Hash) EncodeMsgpack(enc *msgpack.Encoder) error {
	if h.IsZero() {
		return enc.EncodeNil()
	}
	return enc.EncodeBytes(h[:])
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (h *Hash) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return err
	}
	switch n {
	case -1:
		*h = Hash{}
		return nil
	case len(h):
		return dec.ReadFull(h[:])
	}
	return fmt.Errorf("wire: a hash of %d bytes, want %d", n, len(h))
}

// BatchSizes maps worker ids to batch sizes. It encodes with sorted keys, so
// equal maps encode to equal bytes.
type BatchSizes map[string]int

// EncodeMsgpack implements msgpack.CustomEncoder.
func (b BatchSizes) EncodeMsgpack(enc *msgpack.Encoder) error {
	if b == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeMapLen(len(b)); err != nil {
		return err
	}
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := enc.EncodeString(k); err != nil {
			return err
		}
		if err := enc.EncodeInt(int64(b[k])); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack implements msgpack.CustomDecoder. A key that comes twice is
// malformed.
func (b *BatchSizes) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	if n == -1 {
		*b = nil
		return nil
	}
	// validate has checked that n entries fit in the body, so n is bounded
	// by the frame size.
	m := make(BatchSizes, n)
	for range n {
		k, err := dec.DecodeString()
		if err != nil {
			return err
		}
		v, err := dec.DecodeInt()
		if err != nil {
			return err
		}
		if _, dup := m[k]; dup {
			return fmt.Errorf("wire: batch size for %q given twice", k)
		}
		m[k] = v
	}
	*b = m
	return nil
}

var (
	_ msgpack.CustomEncoder = Floats(nil)
	_ msgpack.CustomDecoder = (*Floats)(nil)
	_ msgpack.CustomEncoder = Hash{}
	_ msgpack.CustomDecoder = (*Hash)(nil)
	_ msgpack.CustomEncoder = BatchSizes(nil)
	_ msgpack.CustomDecoder = (*BatchSizes)(nil)
)
