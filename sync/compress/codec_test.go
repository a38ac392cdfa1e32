package compress

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// lenetParams is lenet-caffe's parameter count: the size that matters.
const lenetParams = 431080

// gradLike returns n values shaped like a gradient: mostly small, a few
// large, some exact zeros (a ReLU that never fired).
func gradLike(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float32, n)
	for i := range out {
		switch r.IntN(20) {
		case 0:
			out[i] = 0
		case 1:
			out[i] = float32(r.NormFloat64() * 0.1)
		default:
			out[i] = float32(r.NormFloat64() * 1e-3)
		}
	}
	return out
}

// refHalf is the slow reference of toHalf: the nearest of all finite half
// floats by exhaustive search over the sorted positive ones, ties to the
// even bit pattern, saturating at 65504.
func refHalf(v float32) uint16 {
	sign := uint16(0)
	if math.Signbit(float64(v)) {
		sign = 0x8000
	}
	a := math.Abs(float64(v))
	if a >= maxHalf {
		return sign | 0x7bff
	}
	// Positive halves 0..0x7bff increase with their bits.
	i, _ := slices.BinarySearchFunc(positiveHalves, a, func(h uint16, t float64) int {
		switch x := float64(fromHalf(h)); {
		case x < t:
			return -1
		case x > t:
			return 1
		}
		return 0
	})
	if i < len(positiveHalves) && float64(fromHalf(positiveHalves[i])) == a {
		return sign | positiveHalves[i]
	}
	lo, hi := positiveHalves[i-1], positiveHalves[i]
	dl, dh := a-float64(fromHalf(lo)), float64(fromHalf(hi))-a
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

var positiveHalves = func() []uint16 {
	var out []uint16
	for h := uint16(0); h <= 0x7bff; h++ {
		out = append(out, h)
	}
	return out
}()

func TestHalfMatchesReference(t *testing.T) {
	// Every half float round-trips.
	for h := 0; h < 1<<16; h++ {
		if !halfFinite(uint16(h)) {
			continue
		}
		if got := toHalf(fromHalf(uint16(h))); got != uint16(h) && !(h == 0x8000 && got == 0x8000) {
			t.Fatalf("toHalf(fromHalf(%#04x)) = %#04x", h, got)
		}
	}
	// Random float32 of every magnitude, and the midpoints between halves.
	r := rand.New(rand.NewPCG(1, 1))
	var vals []float32
	for range 200_000 {
		vals = append(vals, math.Float32frombits(r.Uint32()&0xc7ffffff)) // exponents up to ~2^16
		vals = append(vals, float32(r.NormFloat64()*1e-5))
	}
	for h := uint16(0); h < 0x7bff; h += 37 {
		mid := (float64(fromHalf(h)) + float64(fromHalf(h+1))) / 2
		vals = append(vals, float32(mid), -float32(mid))
	}
	vals = append(vals, 65504, 65519, 65520, 1e9, -1e30, 0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32)
	for _, v := range vals {
		if nonFinite(v) {
			continue
		}
		if got, want := toHalf(v), refHalf(v); got != want {
			t.Fatalf("toHalf(%g) = %#04x (%g), reference %#04x (%g)", v, got, fromHalf(got), want, fromHalf(want))
		}
	}
	if h := toHalf(float32(math.NaN())); halfFinite(h) {
		t.Errorf("NaN became the finite half %#04x", h)
	}
	if h := toHalf(float32(math.Inf(-1))); h != 0xfc00 {
		t.Errorf("-Inf became %#04x", h)
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct{ in, name string }{
		{"", "none"}, {"none", "none"}, {"fp16", "fp16"}, {"int8", "int8"},
		{"topk", "topk:0.01"}, {"topk:0.05", "topk:0.05"}, {"topk:1", "topk:1"},
	} {
		c, err := Parse(tt.in)
		if err != nil || c.String() != tt.name {
			t.Errorf("Parse(%q) = %v, %v; want %s", tt.in, c, err, tt.name)
		}
		if again, err := Parse(c.String()); err != nil || again.String() != c.String() {
			t.Errorf("Parse(%q) does not round-trip: %v %v", c.String(), again, err)
		}
	}
	for _, in := range []string{"zip", "topk:0", "topk:1.5", "topk:x", "topk:NaN", "fp16:2", "TOPK"} {
		if _, err := Parse(in); !errors.Is(err, ErrCodec) {
			t.Errorf("Parse(%q): %v, want ErrCodec", in, err)
		}
	}
}

// TestRoundTrip checks each codec's error bound against the input.
func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 257, 1000, 10_007} {
		src := gradLike(n, uint64(n))
		for _, name := range []string{"none", "fp16", "int8", "topk:0.01", "topk:0.3", "topk:1"} {
			c, _ := Parse(name)
			p := c.Append(nil, src)
			got := make([]float32, n)
			if err := Decode(got, p, c.Format()); err != nil {
				t.Fatalf("%s n=%d: %v", name, n, err)
			}
			switch c.(type) {
			case Float32:
				if !slices.Equal(got, src) {
					t.Errorf("%s n=%d: not exact", name, n)
				}
			case Float16:
				for i := range src {
					if got[i] != fromHalf(refHalf(src[i])) {
						t.Fatalf("%s n=%d: value %d is %g, want fp16 of %g", name, n, i, got[i], src[i])
					}
				}
			case Int8:
				for b := 0; b < n; b += BlockSize {
					blk := src[b:min(n, b+BlockSize)]
					var peak float64
					for _, v := range blk {
						peak = max(peak, math.Abs(float64(v)))
					}
					for i, v := range blk {
						if d := math.Abs(float64(got[b+i]) - float64(v)); d > peak/127/2*1.0001 {
							t.Fatalf("%s n=%d: value %d off by %g, bound %g", name, n, b+i, d, peak/254)
						}
					}
				}
			case *TopK:
				checkTopK(t, c.(*TopK), src, got)
			}
		}
	}
}

// checkTopK compares a decoded top-k vector with a sort-based reference:
// exactly the k largest magnitudes (ties to lower indices, zeros never),
// each as its half float.
func checkTopK(t *testing.T, c *TopK, src, got []float32) {
	t.Helper()
	idx := make([]int, len(src))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := math.Abs(float64(src[a])), math.Abs(float64(src[b]))
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	want := make([]float32, len(src))
	for _, i := range idx[:c.K(len(src))] {
		want[i] = fromHalf(toHalf(src[i]))
	}
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s n=%d: value %d is %g, want %g (source %g)", c, len(src), i, got[i], want[i], src[i])
			}
		}
	}
}

// TestTopKTies: many equal magnitudes; the lowest indices win.
func TestTopKTies(t *testing.T) {
	src := make([]float32, 1000)
	for i := range src {
		src[i] = float32(1 - 2*(i%2)) // ±1
	}
	src[700] = 3
	c := NewTopK(0.005) // k = 5
	got := make([]float32, len(src))
	if err := Decode(got, c.Append(nil, src), FormatSparse); err != nil {
		t.Fatal(err)
	}
	checkTopK(t, c, src, got)
	if got[700] != 3 || got[0] != 1 || got[3] != -1 || got[4] != 0 {
		t.Errorf("ties not broken by index: %v ... %v", got[:6], got[700])
	}
	// All zeros: nothing is sent.
	p := c.Append(nil, make([]float32, 1000))
	if _, _, body, _ := Header(p); body[0] != 0 {
		t.Errorf("zeros sent: %v", p)
	}
}

// TestSizes checks the bytes each codec needs for lenet-caffe's gradient
// and logs them (the table in docs/compression.md comes from the
// simulator; this is the codec alone).
func TestSizes(t *testing.T) {
	src := gradLike(lenetParams, 3)
	raw := 4 * lenetParams
	for _, tt := range []struct {
		name     string
		maxRatio float64 // payload / raw at most
	}{{"none", 1.0001}, {"fp16", 0.5001}, {"int8", 0.26}, {"topk:0.01", 0.009}, {"topk:0.001", 0.0011}} {
		c, _ := Parse(tt.name)
		p := c.Append(nil, src)
		t.Logf("%-10s %8d bytes (%.4f of float32, %.1fx fewer)", tt.name, len(p), float64(len(p))/float64(raw), float64(raw)/float64(len(p)))
		if float64(len(p)) > tt.maxRatio*float64(raw) {
			t.Errorf("%s: %d bytes, want at most %.4f of %d", tt.name, len(p), tt.maxRatio, raw)
		}
	}
}

// TestDecodeRefuses: malformed payloads get errors naming what is wrong.
func TestDecodeRefuses(t *testing.T) {
	good16 := Float16{}.Append(nil, []float32{1, 2, 3})
	goodSparse := AppendSparse(nil, []float32{0, 5, 0})
	nan16 := Float16{}.Append(nil, []float32{1, float32(math.NaN()), 3})
	inf8 := binary.LittleEndian.AppendUint32(appendHeader(nil, FormatInt8, 3), math.Float32bits(float32(math.Inf(1))))
	inf8 = append(inf8, 1, 2, 3)
	neg8 := binary.LittleEndian.AppendUint32(appendHeader(nil, FormatInt8, 3), math.Float32bits(-1))
	neg8 = append(neg8, 1, 2, 3)
	sparse := func(k uint64, entries ...byte) []byte {
		return append(binary.AppendUvarint(appendHeader(nil, FormatSparse, 3), k), entries...)
	}
	for _, tt := range []struct {
		name string
		p    []byte
		n    int
		want Format
		err  error
		text string
	}{
		{"empty", nil, 3, 0, ErrMalformed, "empty payload"},
		{"no count", []byte{2}, 3, 0, ErrMalformed, "bad value count"},
		{"huge count", binary.AppendUvarint([]byte{2}, 1<<40), 3, 0, ErrMalformed, "claims"},
		{"length", good16, 4, 0, ErrLength, "of 3 values, want 4"},
		{"wrong codec", good16, 3, FormatInt8, ErrMalformed, "a fp16 payload, the session's codec writes int8"},
		{"unknown format", appendHeader(nil, 9, 3), 3, 0, ErrMalformed, "unknown format 9"},
		{"fp16 short", good16[:len(good16)-1], 3, 0, ErrMalformed, "has 5 bytes, want 6"},
		{"fp16 trailing", append(good16[:len(good16):len(good16)], 0), 3, 0, ErrMalformed, "has 7 bytes"},
		{"fp16 NaN", nan16, 3, 0, ErrNonFinite, "value 1"},
		{"int8 Inf scale", inf8, 3, 0, ErrNonFinite, "block 0"},
		{"int8 negative scale", neg8, 3, 0, ErrNonFinite, "scale -1"},
		{"int8 short", inf8[:len(inf8)-1], 3, 0, ErrMalformed, "want 7"},
		{"sparse too many", sparse(4, 0, 0, 60, 0, 0, 60, 0, 0, 60, 0, 0, 60), 3, 0, ErrMalformed, "4 entries for 3"},
		{"sparse past end", sparse(2, 0, 0, 60), 3, 0, ErrMalformed, "2 entries in 3 bytes"},
		{"sparse index", sparse(1, 3, 0, 60), 3, 0, ErrMalformed, "beyond the 3 values"},
		{"sparse second index", sparse(2, 1, 0, 60, 1, 0, 60), 3, 0, ErrMalformed, "entry 1: index 2+1"},
		{"sparse huge gap", sparse(1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 60), 3, 0, ErrMalformed, "beyond"},
		{"sparse bad varint", sparse(1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 3, 0, ErrMalformed, "bad index gap"},
		{"sparse Inf", sparse(1, 0, 0x00, 0x7c), 3, 0, ErrNonFinite, "entry 0 (index 0)"},
		{"sparse trailing", append(goodSparse[:len(goodSparse):len(goodSparse)], 1, 2, 3), 3, 0, ErrMalformed, "3 bytes after"},
	} {
		dst := make([]float32, tt.n)
		err := Decode(dst, tt.p, tt.want)
		if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: %v, want %v mentioning %q", tt.name, err, tt.err, tt.text)
		}
	}
	dst := make([]float32, 3)
	if err := Decode(dst, goodSparse, FormatSparse); err != nil || !slices.Equal(dst, []float32{0, 5, 0}) {
		t.Errorf("good sparse payload: %v %v", dst, err)
	}
}

// TestFeedback: with error feedback, what was delivered plus the residual
// is what was fed in, so nothing is lost; and every value is eventually
// sent, even one far below the top-k threshold.
func TestFeedback(t *testing.T) {
	const n = 2000
	for _, name := range []string{"topk:0.01", "int8", "fp16", "none"} {
		c, _ := Parse(name)
		f := NewFeedback(c, n)
		fed := make([]float64, n)
		got := make([]float64, n)
		part := make([]float32, n/2)
		g := gradLike(n, 9)
		for it := range 1000 {
			for i := range g {
				g[i] = float32(1e-4 * float64(1+i%7)) // small and steady
				if i == it%n {
					g[i] = 1 // one large value moving around
				}
				fed[i] += float64(g[i])
			}
			// Two parts, the second first, as the layer-wise push does.
			for _, off := range []int{n / 2, 0} {
				p := f.Append(nil, g[off:off+n/2], off)
				if err := Decode(part, p, c.Format()); err != nil {
					t.Fatal(err)
				}
				for i, v := range part {
					got[off+i] += float64(v)
				}
			}
		}
		res := f.Residual()
		for i := range fed {
			r := 0.0
			if res != nil {
				r = float64(res[i])
			}
			if d := math.Abs(got[i] + r - fed[i]); d > 1e-4 {
				t.Fatalf("%s: value %d: delivered %g + residual %g, fed %g", name, i, got[i], r, fed[i])
			}
			if got[i] == 0 {
				t.Fatalf("%s: value %d was never sent in 1000 iterations", name, i)
			}
		}
		f.Reset()
		for _, v := range f.Residual() {
			if v != 0 {
				t.Fatalf("%s: Reset left a residual", name)
			}
		}
	}
}

// TestFeedbackMomentum: with momentum correction the worker's velocity and
// the delivered values follow a float64 reference of u ← m·u + g,
// v ← v + u (with u cleared where a value went out under Mask): without
// the mask, delivered plus residual is dense momentum SGD's update. And the
// correction refuses what it cannot do.
func TestFeedbackMomentum(t *testing.T) {
	for _, mask := range []bool{false, true} {
		testFeedbackMomentum(t, mask)
	}
}

func testFeedbackMomentum(t *testing.T, mask bool) {
	const n, m = 2000, 0.9
	c, _ := Parse("topk:0.01")
	f := NewFeedback(c, n)
	f.Mask = mask
	if err := f.SetMomentum(m); err != nil {
		t.Fatal(err)
	}
	u := make([]float64, n)
	acc := make([]float64, n) // Σ of the velocities accumulated
	got := make([]float64, n)
	part := make([]float32, n/2)
	g := make([]float32, n)
	masked := 0
	for it := range 300 {
		for i := range g {
			g[i] = float32(1e-4 * float64(1+i%7))
			if i == (7*it)%n {
				g[i] = -0.5
			}
		}
		for _, off := range []int{n / 2, 0} {
			for i := off; i < off+n/2; i++ {
				u[i] = m*u[i] + float64(g[i])
				acc[i] += u[i]
			}
			p := f.Append(nil, g[off:off+n/2], off)
			if err := Decode(part, p, c.Format()); err != nil {
				t.Fatal(err)
			}
			for i, v := range part {
				got[off+i] += float64(v)
				if v != 0 && mask {
					u[off+i] = 0
				}
				if v != 0 {
					masked++
				}
			}
		}
	}
	if masked == 0 {
		t.Fatal("nothing was sent")
	}
	res, vel := f.Residual(), f.Velocity()
	for i := range acc {
		if d := math.Abs(got[i] + float64(res[i]) - acc[i]); d > 1e-3*max(1, math.Abs(acc[i])) {
			t.Fatalf("mask %v: value %d: delivered %g + residual %g, accumulated %g", mask, i, got[i], res[i], acc[i])
		}
		if d := math.Abs(float64(vel[i]) - u[i]); d > 1e-3*max(1, math.Abs(u[i])) {
			t.Fatalf("mask %v: value %d: velocity %g, reference %g", mask, i, vel[i], u[i])
		}
	}
	f.Reset()
	for i := range n {
		if res[i] != 0 || vel[i] != 0 {
			t.Fatalf("Reset left residual %g, velocity %g at %d", res[i], vel[i], i)
		}
	}

	// Momentum 0 is plain error feedback, bit for bit.
	f0, plain := NewFeedback(c, n), NewFeedback(c, n)
	if err := f0.SetMomentum(0); err != nil || f0.Velocity() != nil {
		t.Fatalf("SetMomentum(0): %v, velocity %v", err, f0.Velocity() != nil)
	}
	for range 3 {
		if a, b := f0.Append(nil, g, 0), plain.Append(nil, g, 0); !slices.Equal(a, b) {
			t.Fatal("momentum 0 encodes differently from plain error feedback")
		}
	}

	for _, bad := range []float32{-0.1, 1, float32(math.NaN())} {
		if err := NewFeedback(c, n).SetMomentum(bad); err == nil {
			t.Errorf("SetMomentum(%v) accepted", bad)
		}
	}
	if err := NewFeedback(Float32{}, n).SetMomentum(m); err == nil {
		t.Error("momentum correction accepted with a lossless codec")
	}
}

// TestTopKMinAndWarmup: Min keeps at least that many values (a shorter
// vector whole), and the warm-up starts WarmupStart times denser and
// reaches the fraction at its end.
func TestTopKMinAndWarmup(t *testing.T) {
	tk := &TopK{Fraction: 0.01, Min: 256}
	for _, c := range []struct{ n, k int }{{100, 100}, {256, 256}, {1000, 256}, {100000, 1000}, {0, 0}} {
		if k := tk.K(c.n); k != c.k {
			t.Errorf("K(%d) with Min 256: %d, want %d", c.n, k, c.k)
		}
	}
	src := gradLike(520, 3)
	dst := make([]float32, len(src))
	if err := Decode(dst, tk.Append(nil, src), FormatSparse); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, v := range dst {
		if v != 0 {
			sent++
		}
	}
	if sent != 256 {
		t.Errorf("520 values with Min 256: %d sent", sent)
	}
	for _, c := range []struct {
		it   uint64
		want float64
	}{{0, 0.04}, {10, 0.02}, {20, 0.01}, {500, 0.01}} {
		if f := WarmupFraction(0.01, c.it, 20); math.Abs(f-c.want) > 1e-12 {
			t.Errorf("WarmupFraction(0.01, %d, 20) = %g, want %g", c.it, f, c.want)
		}
	}
	if f := WarmupFraction(0.5, 0, 20); f != 1 {
		t.Errorf("WarmupFraction(0.5, 0, 20) = %g, want 1 (capped)", f)
	}
	if f := WarmupFraction(0.01, 3, 0); f != 0.01 {
		t.Errorf("no warm-up: %g", f)
	}
}

// TestFeedbackAdam: with Adam correction the worker's moments follow a
// float64 reference of Adam (bias-corrected, per part's own step count,
// the parts encoded in reverse order as the layer-wise push does), and
// delivered plus residual is the sum of Adam's step directions
// m̂/(√v̂+ε): what dense Adam would have applied at learning rate 1, only
// delayed. Reset forgets the moments and the step counts; SetAdam refuses
// what it cannot do and SetMomentum turns it off.
func TestFeedbackAdam(t *testing.T) {
	const n, b1, b2, eps = 2000, 0.9, 0.999, 1e-8
	c, _ := Parse("topk:0.01")
	f := NewFeedback(c, n)
	if err := f.SetAdam(b1, b2, eps); err != nil || !f.Adam() || f.Momentum() != b1 {
		t.Fatalf("SetAdam: %v, Adam %v, momentum %v", err, f.Adam(), f.Momentum())
	}
	m := make([]float64, n)
	v := make([]float64, n)
	acc := make([]float64, n) // Σ of the step directions
	got := make([]float64, n)
	part := make([]float32, n/2)
	g := make([]float32, n)
	sent := 0
	for it := range 300 {
		for i := range g {
			g[i] = float32(1e-4 * float64(1+i%7) * float64(1-2*(it%3/2)))
			if i == (7*it)%n {
				g[i] = -0.5
			}
		}
		for _, off := range []int{n / 2, 0} {
			t1 := float64(it + 1)
			for i := off; i < off+n/2; i++ {
				m[i] = b1*m[i] + (1-b1)*float64(g[i])
				v[i] = b2*v[i] + (1-b2)*float64(g[i])*float64(g[i])
				mh := m[i] / (1 - math.Pow(b1, t1))
				vh := v[i] / (1 - math.Pow(b2, t1))
				acc[i] += mh / (math.Sqrt(vh) + eps)
			}
			p := f.Append(nil, g[off:off+n/2], off)
			if err := Decode(part, p, c.Format()); err != nil {
				t.Fatal(err)
			}
			for i, x := range part {
				got[off+i] += float64(x)
				if x != 0 {
					sent++
				}
			}
		}
	}
	if sent == 0 {
		t.Fatal("nothing was sent")
	}
	res, vel := f.Residual(), f.Velocity()
	for i := range acc {
		if d := math.Abs(got[i] + float64(res[i]) - acc[i]); d > 2e-3*max(1, math.Abs(acc[i])) {
			t.Fatalf("value %d: delivered %g + residual %g, Adam's directions sum to %g", i, got[i], res[i], acc[i])
		}
		if d := math.Abs(float64(vel[i]) - m[i]); d > 1e-3*max(1e-4, math.Abs(m[i])) {
			t.Fatalf("value %d: first moment %g, reference %g", i, vel[i], m[i])
		}
	}
	f.Reset()
	for i := range n {
		if res[i] != 0 || vel[i] != 0 {
			t.Fatalf("Reset left residual %g, first moment %g at %d", res[i], vel[i], i)
		}
	}
	// After Reset the first step is bias-corrected from step 1 again: a
	// steady gradient gives directions of magnitude about 1.
	dense := NewFeedback(NewTopK(1), 4)
	if err := dense.SetAdam(b1, b2, eps); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 4)
	for range 2 {
		dense.Reset()
		if err := Decode(out, dense.Append(nil, []float32{0.3, -2, 1e-3, 0}, 0), FormatSparse); err != nil {
			t.Fatal(err)
		}
		if want := []float32{1, -1, 1, 0}; !slices.EqualFunc(out, want, func(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-3 }) {
			t.Fatalf("first Adam direction after Reset %v, want %v", out, want)
		}
	}

	for _, bad := range [][3]float32{{1, 0.999, 1e-8}, {0.9, 1, 1e-8}, {-0.1, 0.999, 1e-8}, {0.9, 0.999, 0}, {0.9, float32(math.NaN()), 1e-8}, {0.9, 0.999, float32(math.Inf(1))}} {
		if err := NewFeedback(c, n).SetAdam(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("SetAdam(%v) accepted", bad)
		}
	}
	if err := NewFeedback(Float32{}, n).SetAdam(b1, b2, eps); err == nil {
		t.Error("Adam correction accepted with a lossless codec")
	}
	if err := f.SetMomentum(0); err != nil || f.Adam() || f.Velocity() != nil {
		t.Errorf("SetMomentum(0) after SetAdam: %v, Adam %v", err, f.Adam())
	}
}
