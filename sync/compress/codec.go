package compress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Sentinel errors. Every error of Parse and Decode wraps one of them.
var (
	ErrCodec     = errors.New("compress: unknown codec")
	ErrMalformed = errors.New("compress: malformed payload")
	ErrLength    = errors.New("compress: payload length mismatch")
	ErrNonFinite = errors.New("compress: non-finite value in payload")
)

// Format is the first byte of every payload: which encoding follows. The
// numbers are part of the protocol: never renumber, only append.
type Format byte

// The formats.
const (
	FormatFloat32 Format = 1 // n little-endian float32
	FormatFloat16 Format = 2 // n little-endian IEEE half floats
	FormatInt8    Format = 3 // blocks: float32 scale, then up to BlockSize int8
	FormatSparse  Format = 4 // uvarint k, then k × (uvarint index gap, half float)
)

func (f Format) String() string {
	switch f {
	case FormatFloat32:
		return "float32"
	case FormatFloat16:
		return "fp16"
	case FormatInt8:
		return "int8"
	case FormatSparse:
		return "sparse"
	}
	return fmt.Sprintf("format(%d)", byte(f))
}

// BlockSize is the number of values that share one scale in the int8
// format: small enough that one large value does not crush a whole layer's
// small ones to zero, large enough that the scale costs under 2%.
const BlockSize = 256

// DefaultTopK is the fraction "topk" alone means.
const DefaultTopK = 0.01

// Codec turns a float32 vector into bytes and back. Implementations keep
// scratch space: a Codec is not safe for concurrent use.
type Codec interface {
	// String is the codec's name as Parse reads it ("topk:0.01").
	String() string
	// Lossless reports whether Decode gives back exactly what Append got.
	Lossless() bool
	// Format is the format of the payloads Append writes.
	Format() Format
	// Append appends the encoding of src to dst and returns it.
	Append(dst []byte, src []float32) []byte
}

// Parse returns the codec named s: "none" (or ""), "fp16", "int8", "topk"
// or "topk:F" with F in (0, 1].
func Parse(s string) (Codec, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	if hasArg && name != "topk" {
		return nil, fmt.Errorf("%w: %q: only topk takes a parameter (topk:0.01)", ErrCodec, s)
	}
	switch name {
	case "", "none":
		return Float32{}, nil
	case "fp16":
		return Float16{}, nil
	case "int8":
		return Int8{}, nil
	case "topk":
		frac := DefaultTopK
		if hasArg {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(v > 0 && v <= 1) {
				return nil, fmt.Errorf("%w: %q: the fraction must be a number in (0, 1], like topk:0.01", ErrCodec, s)
			}
			frac = v
		}
		return NewTopK(frac), nil
	}
	return nil, fmt.Errorf("%w: %q, want none, fp16, int8 or topk[:FRACTION]", ErrCodec, s)
}

// appendHeader appends a payload's format byte and value count.
func appendHeader(dst []byte, f Format, n int) []byte {
	return binary.AppendUvarint(append(dst, byte(f)), uint64(n))
}

// Header reads a payload's format and value count and returns the bytes
// after them.
func Header(src []byte) (Format, int, []byte, error) {
	if len(src) == 0 {
		return 0, 0, nil, fmt.Errorf("%w: empty payload", ErrMalformed)
	}
	f := Format(src[0])
	n, k := binary.Uvarint(src[1:])
	if k <= 0 {
		return 0, 0, nil, fmt.Errorf("%w: %s payload: bad value count", ErrMalformed, f)
	}
	if n > math.MaxInt32 {
		return 0, 0, nil, fmt.Errorf("%w: %s payload claims %d values", ErrMalformed, f, n)
	}
	return f, int(n), src[1+k:], nil
}

// Decode writes the vector that payload src describes into dst, which must
// be exactly as long as the payload says (the caller knows the length from
// the model). Any format is accepted; want, when not zero, is the only
// format allowed (the session's codec). It refuses a payload that is not
// well formed, is of another length or format, holds NaN or infinity, or
// has bytes left over, with an error wrapping ErrMalformed, ErrLength or
// ErrNonFinite that says what was wrong. On error dst holds garbage.
func Decode(dst []float32, src []byte, want Format) error {
	f, n, body, err := Header(src)
	if err != nil {
		return err
	}
	if want != 0 && f != want {
		return fmt.Errorf("%w: a %s payload, the session's codec writes %s", ErrMalformed, f, want)
	}
	if n != len(dst) {
		return fmt.Errorf("%w: a %s payload of %d values, want %d", ErrLength, f, n, len(dst))
	}
	switch f {
	case FormatFloat32:
		return decodeFloat32(dst, body)
	case FormatFloat16:
		return decodeFloat16(dst, body)
	case FormatInt8:
		return decodeInt8(dst, body)
	case FormatSparse:
		return decodeSparse(dst, body)
	}
	return fmt.Errorf("%w: unknown format %d", ErrMalformed, byte(f))
}

// nonFinite reports whether v is NaN or ±Inf.
func nonFinite(v float32) bool {
	return math.Float32bits(v)&0x7f800000 == 0x7f800000
}

// Float32 is the "none" codec: raw little-endian float32.
type Float32 struct{}

func (Float32) String() string { return "none" }

// Lossless implements Codec.
func (Float32) Lossless() bool { return true }

// Format implements Codec.
func (Float32) Format() Format { return FormatFloat32 }

// Append implements Codec.
func (Float32) Append(dst []byte, src []float32) []byte {
	dst = appendHeader(slices.Grow(dst, 4*len(src)+11), FormatFloat32, len(src))
	for _, v := range src {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

func decodeFloat32(dst []float32, body []byte) error {
	if len(body) != 4*len(dst) {
		return fmt.Errorf("%w: float32 payload of %d values has %d bytes, want %d", ErrMalformed, len(dst), len(body), 4*len(dst))
	}
	for i := range dst {
		v := math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		if nonFinite(v) {
			return fmt.Errorf("%w: value %d is %v", ErrNonFinite, i, v)
		}
		dst[i] = v
	}
	return nil
}

var (
	_ Codec = Float32{}
	_ Codec = Float16{}
	_ Codec = Int8{}
	_ Codec = (*TopK)(nil)
)
