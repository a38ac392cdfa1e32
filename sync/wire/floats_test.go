package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// naiveBytes is the reference encoding of a vector's payload: each value's
// IEEE bits, little-endian, one at a time.
func naiveBytes(f []float32) []byte {
	var out []byte
	for _, v := range f {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// randFloats returns n values including the awkward ones: NaNs with
// payloads, infinities, negative zero, subnormals.
func randFloats(n int, seed uint64) Floats {
	r := rand.New(rand.NewPCG(seed, 2))
	f := make(Floats, n)
	special := []float32{
		float32(math.NaN()), math.Float32frombits(0x7fc00001), math.Float32frombits(0xffbfffff),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32,
	}
	for i := range f {
		if r.IntN(8) == 0 {
			f[i] = special[r.IntN(len(special))]
		} else {
			f[i] = math.Float32frombits(r.Uint32())
		}
	}
	return f
}

// sameBits reports whether a and b hold the same values bit for bit (NaNs
// included, which == would not).
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestFloatsMatchesNaive checks both encoding paths (the frame buffer's and
// a generic writer's, in chunks) against the naive encoding, and both
// decoding paths back, for lengths around the chunk size.
func TestFloatsMatchesNaive(t *testing.T) {
	for _, n := range []int{0, 1, 3, chunk/4 - 1, chunk / 4, chunk/4 + 1, 3*chunk/4 + 5, 10_000} {
		f := randFloats(n, uint64(n))
		want := append(binHead(4*n), naiveBytes(f)...)

		// Generic writer (bytes.Buffer) and generic reader (bytes.Reader).
		generic, err := msgpack.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(generic, want) {
			t.Errorf("n=%d: generic encoding differs from the naive one", n)
		}
		var back Floats
		if err := msgpack.Unmarshal(generic, &back); err != nil || !sameBits(back, f) {
			t.Errorf("n=%d: generic decoding: %v, values differ: %v", n, err, !sameBits(back, f))
		}

		// The frame path: the payload must hold the same bytes.
		m := &Push{Gradient: f}
		frame := frameBytes(t, m)
		if !bytes.Contains(frame, want) {
			t.Errorf("n=%d: the frame does not hold the naive encoding", n)
		}
		got, err := ReadFrame(bytes.NewReader(frame), len(frame))
		if err != nil {
			t.Fatal(err)
		}
		if g := got.(*Push).Gradient; !sameBits(g, f) || g == nil {
			t.Errorf("n=%d: frame round trip changed the vector", n)
		}
	}
}

// binHead is the msgpack bin header for n bytes.
func binHead(n int) []byte {
	switch {
	case n < 256:
		return []byte{0xc4, byte(n)}
	case n < 1<<16:
		return binary.BigEndian.AppendUint16([]byte{0xc5}, uint16(n))
	}
	return binary.BigEndian.AppendUint32([]byte{0xc6}, uint32(n))
}

// TestFloatsNil: nil and empty stay distinct.
func TestFloatsNil(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   Floats
	}{{"nil", nil}, {"empty", Floats{}}} {
		got, err := ReadFrame(bytes.NewReader(frameBytes(t, &Push{Gradient: tt.in})), 100)
		if err != nil {
			t.Fatal(err)
		}
		if g := got.(*Push).Gradient; (g == nil) != (tt.in == nil) || len(g) != 0 {
			t.Errorf("%s came back as %#v", tt.name, g)
		}
	}
}

// TestFloatsGenericTruncated: a bin longer than the stream fails on the
// generic path without allocating for the claimed length.
func TestFloatsGenericTruncated(t *testing.T) {
	data := append([]byte{0xc6, 0x7f, 0xff, 0xff, 0xfc}, make([]byte, 100)...)
	var f Floats
	if err := msgpack.Unmarshal(data, &f); err == nil {
		t.Fatalf("decoding a bin of 2 GiB from 100 bytes succeeded")
	}
	if cap(f) > 1<<20 {
		t.Errorf("%d floats allocated for 100 bytes", cap(f))
	}
}

func TestCheckLen(t *testing.T) {
	f := make(Floats, 5)
	if err := f.CheckLen("gradient", 5); err != nil {
		t.Errorf("CheckLen(5) of 5 values: %v", err)
	}
	err := f.CheckLen("gradient", 431080)
	if !errors.Is(err, ErrLength) || err.Error() != "wire: vector length mismatch: gradient has 5 values, the model has 431080" {
		t.Errorf("CheckLen(431080) of 5 values: %v", err)
	}
}

// lenetParams is the size of lenet-caffe's gradient.
const lenetParams = 431080

func BenchmarkEncodePush(b *testing.B) {
	m := &Push{Header: Header{Iteration: 1, Sender: "w1"}, Samples: 64, Gradient: randFloats(lenetParams, 1)}
	w := NewWriter(nil)
	var dst []byte
	var err error
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = w.encode(m); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(dst)))
	b.ReportMetric(float64(len(dst))/lenetParams, "bytes/param")
}

func BenchmarkDecodePush(b *testing.B) {
	m := &Push{Header: Header{Iteration: 1, Sender: "w1"}, Samples: 64, Gradient: randFloats(lenetParams, 1)}
	frame, err := NewWriter(nil).AppendFrame(nil, m)
	if err != nil {
		b.Fatal(err)
	}
	r := NewReader(nil, len(frame))
	var reuse Message
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			if _, err := r.decode(frame[4:], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reuse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			if reuse, err = r.decode(frame[4:], reuse); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stream", func(b *testing.B) { // ReadMessage: copy from the stream, then decode
		b.ReportAllocs()
		b.SetBytes(int64(len(frame)))
		src := bytes.NewReader(frame)
		r.r = src
		for b.Loop() {
			src.Reset(frame)
			if reuse, err = r.ReadMessage(reuse); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestConvertLoops: the value-by-value loops (big-endian machines' path)
// write the naive encoding and read it back bit for bit, as the copy does
// on this machine.
func TestConvertLoops(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		f := randFloats(n, uint64(n))
		want := naiveBytes(f)
		for name, put := range map[string]func([]byte, []float32){"loop": putFloatsLoop, "putFloats": putFloats} {
			buf := make([]byte, 4*n)
			put(buf, f)
			if !bytes.Equal(buf, want) {
				t.Fatalf("%s, %d values: bytes differ from the naive encoding", name, n)
			}
		}
		for name, get := range map[string]func([]float32, []byte){"loop": getFloatsLoop, "getFloats": getFloats} {
			back := make([]float32, n)
			get(back, want)
			if !sameBits(back, f) {
				t.Fatalf("%s, %d values: decoded values differ", name, n)
			}
		}
	}
}

// BenchmarkConvert puts the conversion loops beside a plain copy of the
// same bytes, the floor any encoding could reach.
func BenchmarkConvert(b *testing.B) {
	f := randFloats(lenetParams, 1)
	buf := make([]byte, 4*len(f))
	b.Run("put", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			putFloats(buf, f)
		}
	})
	b.Run("get", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			getFloats(f, buf)
		}
	})
	b.Run("copy", func(b *testing.B) {
		dst := make([]byte, len(buf))
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			copy(dst, buf)
		}
	})
}

// TestPushSize: a Push costs 4 bytes per parameter and a small fixed
// overhead (the figure doc.go quotes for lenet-caffe).
func TestPushSize(t *testing.T) {
	m := &Push{Header: Header{Iteration: 1 << 40, Sender: "12D3KooWworker"}, Samples: 64, ComputeNanos: 1e9, Loss: 2.3,
		Gradient: make(Floats, lenetParams)}
	got := len(frameBytes(t, m))
	if over := got - 4*lenetParams; over <= 0 || over > 100 {
		t.Errorf("a Push of %d floats takes %d bytes: %d bytes of overhead", lenetParams, got, over)
	}
	t.Logf("lenet-caffe Push frame: %d bytes", got)
}
