package half

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ref is the slow reference of FromFloat32: the nearest of all finite
// halves by binary search over the positive ones (whose bit patterns
// increase with their values), ties to the even pattern, and infinity from
// 65520 (the midpoint between 65504 and the next, nonexistent, 65536) up.
func ref(v float32) uint16 {
	sign := uint16(0)
	if math.Signbit(float64(v)) {
		sign = 0x8000
	}
	a := math.Abs(float64(v))
	if a >= 65520 {
		return sign | 0x7c00
	}
	i, found := slices.BinarySearchFunc(positive, a, func(h uint16, t float64) int {
		switch x := float64(ToFloat32(h)); {
		case x < t:
			return -1
		case x > t:
			return 1
		}
		return 0
	})
	if found {
		return sign | positive[i]
	}
	if i == len(positive) { // between 65504 and 65520: rounds down
		return sign | 0x7bff
	}
	lo, hi := positive[i-1], positive[i]
	dl, dh := a-float64(ToFloat32(lo)), float64(ToFloat32(hi))-a
	switch {
	case dl < dh:
		return sign | lo
	case dh < dl:
		return sign | hi
	case lo&1 == 0:
		return sign | lo
	}
	return sign | hi
}

var positive = func() []uint16 {
	var out []uint16
	for h := uint16(0); h <= 0x7bff; h++ {
		out = append(out, h)
	}
	return out
}()

func TestFromFloat32MatchesReference(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		if !Finite(uint16(h)) {
			continue
		}
		if got := FromFloat32(ToFloat32(uint16(h))); got != uint16(h) {
			t.Fatalf("FromFloat32(ToFloat32(%#04x)) = %#04x", h, got)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	var vals []float32
	for range 200_000 {
		vals = append(vals, math.Float32frombits(r.Uint32()&0xc7ffffff)) // exponents up to about 2¹⁶
		vals = append(vals, float32(r.NormFloat64()*1e-5))               // half subnormals
	}
	for h := uint16(0); h < 0x7bff; h += 37 {
		mid := (float64(ToFloat32(h)) + float64(ToFloat32(h+1))) / 2
		vals = append(vals, float32(mid), -float32(mid))
	}
	vals = append(vals, 65504, 65519, 65519.996, 65520, 1e9, -1e30, 0, float32(math.Copysign(0, -1)),
		math.SmallestNonzeroFloat32, 2.9802322e-08, 2.9802326e-08, 5.9604645e-08)
	for _, v := range vals {
		if got, want := FromFloat32(v), ref(v); got != want {
			t.Fatalf("FromFloat32(%g) = %#04x (%g), reference %#04x (%g)", v, got, ToFloat32(got), want, ToFloat32(want))
		}
	}
}

func TestSpecialValues(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{float32(math.Inf(1)), 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{65520, 0x7c00},
		{-65520, 0xfc00},
		{65519, 0x7bff},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{5.9604645e-08, 0x0001}, // 2⁻²⁴, the smallest subnormal
	} {
		if got := FromFloat32(c.in); got != c.want {
			t.Errorf("FromFloat32(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if h := FromFloat32(float32(math.NaN())); Finite(h) || h&0x3ff == 0 {
		t.Errorf("NaN became %#04x", h)
	}
	for _, v := range []float32{1.0001, -3, 70000, 0.1} {
		if got, want := Round(v), ToFloat32(FromFloat32(v)); got != want {
			t.Errorf("Round(%g) = %g, want %g", v, got, want)
		}
	}
	if r := Round(70000); !math.IsInf(float64(r), 1) {
		t.Errorf("70000 rounded to %g, want +Inf", r)
	}
}
