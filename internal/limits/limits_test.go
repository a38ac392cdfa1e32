//go:build !386 && !arm && !mips && !mipsle

// The cases are issue 28's 64-bit sizes (2^60-11, 2^62+7, 2^32, ...),
// which a 32-bit int cannot hold: on a 32-bit build they do not compile,
// and such values are refused where they are decoded.

package limits

import (
	"errors"
	"math"
	"testing"
)

func TestProduct(t *testing.T) {
	for _, tc := range []struct {
		xs   []int
		want int
		err  error
	}{
		{[]int{6, 1, 5, 5}, 150, nil},
		{nil, 1, nil},
		{[]int{1 << 16, 1 << 15}, 1 << 31, nil},
		{[]int{1 << 16, 1<<15 + 1}, 0, ErrTooLarge},
		// issue 28: 16·(2^59-2)² wraps to 64 in int64 arithmetic.
		{[]int{16, 1<<59 - 2, 1<<59 - 2}, 0, ErrTooLarge},
		{[]int{1<<62 + 7, 4}, 0, ErrTooLarge},
		{[]int{math.MaxInt, math.MaxInt}, 0, ErrTooLarge},
		{[]int{3, -1}, 0, ErrInvalid},
	} {
		got, err := Product("x", tc.xs...)
		if !errors.Is(err, tc.err) || (err == nil && got != tc.want) {
			t.Errorf("Product(%v) = %d, %v; want %d, %v", tc.xs, got, err, tc.want, tc.err)
		}
	}
}

func TestElementsSumExtentBytes(t *testing.T) {
	if _, err := Elements("t", []int{2, 0, 3}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a zero dim: %v", err)
	}
	if n, err := Sum("s", 1<<30, 1<<30); err != nil || n != 1<<31 {
		t.Errorf("Sum at the limit: %d, %v", n, err)
	}
	if _, err := Sum("s", 1<<30, 1<<30, 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Sum over the limit: %v", err)
	}
	if _, err := Extent("pads", 1<<60-11, false); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Extent 2^60-11: %v", err)
	}
	if _, err := Extent("strides", 0, true); !errors.Is(err, ErrInvalid) {
		t.Errorf("a zero stride: %v", err)
	}
	if v, err := Extent("pads", 0, false); err != nil || v != 0 {
		t.Errorf("a zero pad: %d, %v", v, err)
	}
	if _, err := Count("c", -1, false); !errors.Is(err, ErrInvalid) {
		t.Errorf("a negative count: %v", err)
	}
	if _, err := Bytes64("b", 1<<62, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("2^64 bytes: %v", err)
	}
	if p, err := Product64("p", 1<<31); err != nil || p != 1<<31 {
		t.Errorf("Product64 at the limit: %d, %v", p, err)
	}
}

func TestRange(t *testing.T) {
	for _, tc := range []struct {
		off, n, size int64
		err          error
	}{
		{0, 10, 10, nil},
		{4, 6, 10, nil},
		{10, 0, 10, nil},
		{4, 7, 10, ErrTooLarge},
		{11, 0, 10, ErrTooLarge},
		// off+n wraps to a small number in int64 arithmetic.
		{math.MaxInt64, math.MaxInt64, 10, ErrTooLarge},
		{5, math.MaxInt64, 10, ErrTooLarge},
		{-1, 1, 10, ErrInvalid},
		{0, -1, 10, ErrInvalid},
	} {
		if err := Range("x", tc.off, tc.n, tc.size); !errors.Is(err, tc.err) {
			t.Errorf("Range(%d, %d, %d) = %v, want %v", tc.off, tc.n, tc.size, err, tc.err)
		}
	}
}
