package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Float16 is the "fp16" codec: every value as an IEEE half float (see
// toHalf for rounding and saturation).
type Float16 struct{}

func (Float16) String() string { return "fp16" }

// Lossless implements Codec.
func (Float16) Lossless() bool { return false }

// Format implements Codec.
func (Float16) Format() Format { return FormatFloat16 }

// Append implements Codec.
func (Float16) Append(dst []byte, src []float32) []byte {
	dst = appendHeader(slices.Grow(dst, 2*len(src)+11), FormatFloat16, len(src))
	for _, v := range src {
		dst = binary.LittleEndian.AppendUint16(dst, toHalf(v))
	}
	return dst
}

func decodeFloat16(dst []float32, body []byte) error {
	if len(body) != 2*len(dst) {
		return fmt.Errorf("%w: fp16 payload of %d values has %d bytes, want %d", ErrMalformed, len(dst), len(body), 2*len(dst))
	}
	for i := range dst {
		h := binary.LittleEndian.Uint16(body[2*i:])
		if !halfFinite(h) {
			return fmt.Errorf("%w: value %d is %v", ErrNonFinite, i, fromHalf(h))
		}
		dst[i] = fromHalf(h)
	}
	return nil
}

// Int8 is the "int8" codec: blocks of BlockSize values (the last may be
// shorter), each written as a float32 scale s = max|x|/127 followed by
// one signed byte q = round(x/s) per value; the receiver reads q·s. The
// error of a value is at most s/2: small next to the block's largest.
type Int8 struct{}

func (Int8) String() string { return "int8" }

// Lossless implements Codec.
func (Int8) Lossless() bool { return false }

// Format implements Codec.
func (Int8) Format() Format { return FormatInt8 }

// maxScale is the largest scale a payload may carry: 127 times it is
// still a finite float32.
const maxScale = math.MaxFloat32 / 127

// Append implements Codec. A block holding NaN or infinity gets a NaN
// scale, which the receiver refuses; a finite block whose scale would
// overflow saturates.
func (Int8) Append(dst []byte, src []float32) []byte {
	dst = appendHeader(slices.Grow(dst, int8Size(len(src))+11), FormatInt8, len(src))
	for len(src) > 0 {
		blk := src[:min(BlockSize, len(src))]
		src = src[len(blk):]
		var peak float32
		bad := false
		for _, v := range blk {
			if nonFinite(v) {
				bad = true
			}
			peak = max(peak, float32(math.Abs(float64(v))))
		}
		scale := peak / 127
		if bad {
			scale = float32(math.NaN())
		} else if scale > maxScale {
			scale = maxScale
		}
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(scale))
		for _, v := range blk {
			var q float32
			if scale > 0 {
				q = v / scale
			}
			// Round half away from zero, by hand: math.Round through
			// float64 costs more than the rest of the loop.
			if q >= 0 {
				q += 0.5
			} else {
				q -= 0.5
			}
			dst = append(dst, byte(int8(max(-127, min(127, q)))))
		}
	}
	return dst
}

// int8Size is the payload body size of n values.
func int8Size(n int) int { return n + 4*((n+BlockSize-1)/BlockSize) }

func decodeInt8(dst []float32, body []byte) error {
	if want := int8Size(len(dst)); len(body) != want {
		return fmt.Errorf("%w: int8 payload of %d values has %d bytes, want %d", ErrMalformed, len(dst), len(body), want)
	}
	for b := 0; len(dst) > 0; b++ {
		blk := dst[:min(BlockSize, len(dst))]
		dst = dst[len(blk):]
		scale := math.Float32frombits(binary.LittleEndian.Uint32(body))
		body = body[4:]
		if nonFinite(scale) || scale < 0 || scale > maxScale {
			return fmt.Errorf("%w: block %d has scale %v, want a finite value in [0, %g]", ErrNonFinite, b, scale, float32(maxScale))
		}
		for i := range blk {
			blk[i] = float32(int8(body[i])) * scale
		}
		body = body[len(blk):]
	}
	return nil
}
