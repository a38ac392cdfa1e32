package sim

import (
	"bytes"
	"fmt"
	"math"
	"unsafe"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/wire"
)

// checker holds what the invariants are checked against, independently of
// the hub core's own bookkeeping:
//
//  1. every part of the merged update of an iteration equals Σ bᵢgᵢ / Σ bᵢ
//     over the pushes of that part the hub accepted, recomputed here in
//     float64 in the order they arrived from what the pushes decode to (so
//     up to rounding: relative 1e-6 per element), and then up to what the
//     session's codec loses on the way down: half a step of fp16 (a 2⁻¹¹
//     relative error, fp16 and top-k) or of int8 (half the block's scale);
//  2. every worker whose state reaches iteration k holds, bit for bit, the
//     weights the hub had after step k.
type checker struct {
	codec   compress.Codec
	bounds  []int     // part j is [bounds[j], bounds[j+1])
	acc     []float64 // Σ bᵢgᵢ of the open iteration's accepted pushes
	samples []int     // Σ bᵢ per part
	count   []int     // pushes per part
	pushes  int
	snaps   map[uint64][]float32 // hub weights after k steps
	scratch []float32
}

// keep is how many snapshots of the hub's weights are kept: a worker
// applies Merged k before the hub can close k+1 unless it is idle, and an
// idle worker is at most a few Merged behind on the network.
const keep = 16

// newChecker returns a checker for a session of params values split at
// starts (Session.Parts, or {0}) with the given codec.
func newChecker(params int, starts []int, codec compress.Codec) checker {
	return checker{codec: codec, bounds: append(append([]int(nil), starts...), params),
		acc: make([]float64, params), samples: make([]int, len(starts)), count: make([]int, len(starts)),
		snaps: map[uint64][]float32{}, scratch: make([]float32, params)}
}

// decode returns the payload of a part: raw values as they are (only
// read), encoded ones decoded into scratch.
func (c *checker) decode(part int, raw wire.Floats, enc []byte) ([]float32, error) {
	if part < 0 || part >= len(c.samples) {
		return nil, fmt.Errorf("part %d of %d", part, len(c.samples))
	}
	dst := c.scratch[c.bounds[part]:c.bounds[part+1]]
	if enc == nil {
		if len(raw) != len(dst) {
			return nil, fmt.Errorf("part %d has %d values, want %d", part, len(raw), len(dst))
		}
		return raw, nil
	}
	return dst, compress.Decode(dst, enc, 0)
}

// pushed adds a push the hub accepted.
func (c *checker) pushed(m *wire.Push) error {
	g, err := c.decode(m.Part, m.Gradient, m.Enc)
	if err != nil {
		return fmt.Errorf("%w: the hub accepted a push that does not decode: %v", ErrInvariant, err)
	}
	w := float64(m.Samples)
	acc := c.acc[c.bounds[m.Part]:][:len(g)]
	for i, v := range g {
		acc[i] += float64(w * float64(v)) // float64(): not fused on any target
	}
	c.samples[m.Part] += m.Samples
	c.count[m.Part]++
	c.pushes++
	return nil
}

// reset forgets the pushes (the iteration closed or reopened).
func (c *checker) reset() {
	clear(c.acc)
	clear(c.samples)
	clear(c.count)
	c.pushes = 0
}

// merged checks a Merged (a part sent ahead or the final one) against the
// pushes of its part.
func (c *checker) merged(m *wire.Merged) error {
	if c.pushes == 0 {
		return fmt.Errorf("%w: Merged %d with no push accepted", ErrInvariant, m.Iteration)
	}
	got, err := c.decode(m.Part, m.Gradient, m.Enc)
	if err != nil {
		return fmt.Errorf("%w: Merged %d: %v", ErrInvariant, m.Iteration, err)
	}
	lo := c.bounds[m.Part]
	acc := c.acc[lo : lo+len(got)]
	inv := 0.0 // 1/Σ bᵢ: a product per element, not a division
	if n := c.samples[m.Part]; n > 0 {
		inv = 1 / float64(n)
	}
	mean := func(i int) float64 { return float64(acc[i] * inv) } // float64(): not fused on any target
	for b := 0; b < len(got); b += compress.BlockSize {
		end := min(len(got), b+compress.BlockSize)
		// The codec's share of the tolerance.
		var quant, rel float64
		switch c.codec.Format() {
		case compress.FormatFloat16, compress.FormatSparse:
			rel, quant = 1.0/2048, 3e-8 // half an fp16 step; subnormals
		case compress.FormatInt8:
			peak := 0.0
			for i := b; i < end; i++ {
				peak = max(peak, math.Abs(mean(i)))
			}
			quant = peak / 127 / 2 * 1.001
		}
		for i := b; i < end; i++ {
			want := mean(i)
			d := math.Abs(float64(got[i]) - want)
			if d > float64((1e-6+rel)*(math.Abs(want)+1e-6))+quant && d > 1e-12 {
				return fmt.Errorf("%w: Merged %d element %d is %v, the sample-weighted mean of %d pushes (%d samples of part %d) is %v (codec %s)",
					ErrInvariant, m.Iteration, lo+i, got[i], c.pushes, c.samples[m.Part], m.Part, want, c.codec)
			}
		}
	}
	return nil
}

// snapshot keeps the hub's weights after k steps, in the buffer of the
// snapshot it forgets (one allocation per kept snapshot, not per step).
func (c *checker) snapshot(k uint64, net *solver.Net) {
	buf, ok := c.snaps[k-keep]
	delete(c.snaps, k-keep)
	if !ok || len(buf) != net.Params.Len() {
		buf = make([]float32, net.Params.Len())
	}
	net.B.Download(buf, net.Params)
	c.snaps[k] = buf
}

// weights checks a worker's weights at iteration k against the hub's.
func (c *checker) weights(who string, k uint64, net *solver.Net) error {
	want, ok := c.snaps[k]
	if !ok {
		if k == 0 {
			return nil // the initial state: a Welcome before any step
		}
		return fmt.Errorf("%w: %s reached iteration %d, which the hub's last %d steps do not include", ErrInvariant, who, k, keep)
	}
	got, ok := net.Params.(gpu.Host) // compared where it lies
	if !ok {
		got = c.scratch
		net.B.Download(got, net.Params)
	}
	if len(got) == len(want) && bytes.Equal(floatBytes(got), floatBytes(want)) {
		return nil // bit for bit, as memory: the common case, and fast
	}
	if len(got) != len(want) {
		return fmt.Errorf("%w: %s at iteration %d has %d weights, the hub %d", ErrInvariant, who, k, len(got), len(want))
	}
	for i, v := range got {
		if math.Float32bits(v) != math.Float32bits(want[i]) {
			return fmt.Errorf("%w: %s at iteration %d: weight %d is %v, the hub's is %v", ErrInvariant, who, k, i, v, want[i])
		}
	}
	return nil
}

// floatBytes returns v's memory as bytes.
func floatBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}
