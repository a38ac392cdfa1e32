// Package limits is the one place where cotrain checks the sizes it
// computes from a file or a message: the dims of a tensor, the sizes,
// kernels, strides, pads and groups of a layer, the products and sums of
// them and the bytes they take. Every function counts in 64-bit integers
// that cannot overflow for arguments within the limits, and refuses, with
// an error wrapping ErrTooLarge (or ErrInvalid) that names what was
// checked, any result over a limit, before the caller allocates or indexes
// anything with it.
//
// The ONNX importer (models/onnx), the weight-file reader (models), the
// geometry of convolutions and pools (gpu's ConvGeom and PoolGeom Setup),
// the layer descriptions a hub sends in its Welcome (models.GraphNodes) and
// solver.NewNet all go through it, so a hostile or broken model is refused
// with a message, never a panic, an out-of-bounds write or an allocation of
// terabytes.
//
// Caller's duties:
//  1. Check every integer that came from outside with Extent, Count or Dims
//     before any arithmetic on it.
//  2. Compute products with Elements or Product and sums with Sum, never
//     with bare * and +, until the result has been checked.
//  3. Allocate only sizes these functions returned without error.
package limits

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
)

const (
	// MaxElements caps the elements of one tensor or flat buffer (2^31,
	// 8 GiB of float32): the weight file's limit since its first version.
	// On a 32-bit platform Bytes refuses what does not fit its int.
	MaxElements = 1 << 31
	// MaxExtent caps a spatial size, a kernel, a stride or a pad (2^24):
	// an image 16 million pixels wide is no phone's input, and sums of a few
	// such values cannot overflow even a 32-bit int.
	MaxExtent = 1 << 24
)

var (
	// ErrTooLarge is wrapped by every refusal of a size over a limit.
	ErrTooLarge = errors.New("limits: size over the limit")
	// ErrInvalid is wrapped by refusals of sizes that are negative or zero
	// where they must be positive.
	ErrInvalid = errors.New("limits: invalid size")
)

// Extent checks one spatial size, kernel, stride or pad: 0 <= v <=
// MaxExtent, and v >= 1 when positive is set. what names it in the error.
func Extent(what string, v int64, positive bool) (int, error) {
	return within(what, v, positive, MaxExtent)
}

// Count checks a count of elements or channels: 0 <= v <= MaxElements, and
// v >= 1 when positive is set.
func Count(what string, v int64, positive bool) (int, error) {
	return within(what, v, positive, MaxElements)
}

func within(what string, v int64, positive bool, max int64) (int, error) {
	switch {
	case v < 0 || (positive && v == 0):
		return 0, fmt.Errorf("%w: %s %d, want %s", ErrInvalid, what, v, want(positive))
	case v > max:
		return 0, fmt.Errorf("%w: %s %d, at most %d", ErrTooLarge, what, v, max)
	case v > math.MaxInt:
		// Only on a 32-bit platform, where MaxElements is MaxInt+1.
		return 0, fmt.Errorf("%w: %s %d, this %d-bit build holds at most %d", ErrTooLarge, what, v, strconv.IntSize, math.MaxInt)
	}
	return int(v), nil
}

func want(positive bool) string {
	if positive {
		return "a positive number"
	}
	return "a number that is not negative"
}

// Product returns the product of xs (each non-negative) when it is at most
// MaxElements and fits this platform's int; what names the result in the
// error.
func Product(what string, xs ...int) (int, error) {
	p := int64(1)
	for _, x := range xs {
		var err error
		if p, err = mul64(what, p, int64(x), xs); err != nil {
			return 0, err
		}
	}
	return within(what, p, false, MaxElements)
}

// Product64 is Product for sizes read as 64-bit integers, before they
// become ints: the result is at most MaxElements but may exceed a 32-bit
// int (check it with Bytes64 or Count before it becomes one).
func Product64(what string, xs ...int64) (int64, error) {
	p := int64(1)
	for _, x := range xs {
		var err error
		if p, err = mul64(what, p, x, xs); err != nil {
			return 0, err
		}
	}
	return p, nil
}

func mul64[T int | int64](what string, p, x int64, xs []T) (int64, error) {
	if x < 0 {
		return 0, fmt.Errorf("%w: %s: factor %d of %v, want non-negative", ErrInvalid, what, x, xs)
	}
	hi, lo := bits.Mul64(uint64(p), uint64(x))
	if hi != 0 || lo > MaxElements {
		return 0, fmt.Errorf("%w: %s: the product of %v exceeds %d", ErrTooLarge, what, xs, int64(MaxElements))
	}
	return int64(lo), nil
}

// Elements is Product for the dims of a tensor: each dim positive (a zero
// dim too is refused: no tensor of cotrain is empty).
func Elements(what string, dims []int) (int, error) {
	for _, d := range dims {
		if d <= 0 {
			return 0, fmt.Errorf("%w: %s: dimension %d in %v, want positive", ErrInvalid, what, d, dims)
		}
	}
	return Product(what, dims...)
}

// Sum returns the sum of xs (each non-negative) when it is at most
// MaxElements.
func Sum(what string, xs ...int) (int, error) {
	var s uint64
	for _, x := range xs {
		if x < 0 {
			return 0, fmt.Errorf("%w: %s: term %d, want non-negative", ErrInvalid, what, x)
		}
		s += uint64(x) // each term is an int: no overflow of uint64 below 2^63 terms
		if s > MaxElements {
			return 0, fmt.Errorf("%w: %s: the sum exceeds %d", ErrTooLarge, what, int64(MaxElements))
		}
	}
	return within(what, int64(s), false, MaxElements)
}

// Bytes returns elems × width as an int when it fits this platform's int
// (a 32-bit build addresses at most 2 GiB in one slice).
func Bytes(what string, elems, width int) (int, error) {
	return Bytes64(what, int64(elems), width)
}

// Bytes64 is Bytes for a count of elements read as a 64-bit integer.
func Bytes64(what string, elems int64, width int) (int, error) {
	if elems < 0 || width <= 0 {
		return 0, fmt.Errorf("%w: %s: %d elements of %d bytes", ErrInvalid, what, elems, width)
	}
	hi, lo := bits.Mul64(uint64(elems), uint64(width))
	if hi != 0 || lo > math.MaxInt {
		return 0, fmt.Errorf("%w: %s takes %d bytes (%d elements of %d), this %d-bit build holds at most %d",
			ErrTooLarge, what, lo, elems, width, strconv.IntSize, math.MaxInt)
	}
	return int(lo), nil
}

// Range checks that length bytes from offset lie within a file of size
// bytes (offset and length non-negative, offset+length <= size, computed
// without overflow), before the caller allocates length bytes or seeks to
// offset. what names the range in the error.
func Range(what string, offset, length, size int64) error {
	switch {
	case offset < 0 || length < 0 || size < 0:
		return fmt.Errorf("%w: %s: offset %d, length %d in a file of %d bytes", ErrInvalid, what, offset, length, size)
	case offset > size || length > size-offset:
		return fmt.Errorf("%w: %s: %d bytes from offset %d run past the end of a file of %d bytes", ErrTooLarge, what, length, offset, size)
	}
	return nil
}
