package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// TopK is the "topk:F" codec: it sends the k = ⌈F·n⌉ values of largest
// magnitude (exact zeros never) in the sparse format: the count k, then for
// each value in increasing index order the gap to the previous index
// (index − previous − 1, the first counted from −1) as a uvarint and the
// value as a half float. At F = 1% the gaps average 99: one byte, rarely
// two, so a value costs about 3 bytes against 4·100 for the dense vector.
//
// The k-th largest magnitude is found by a radix select over the float
// bits (two passes of 16 bits): linear time whatever the values, and the
// same choice on every machine. Ties at the threshold go to the lower
// indices.
type TopK struct {
	Fraction float64
	// Min is the fewest values an encoding keeps (all of a vector of at
	// most Min values): small layers such as the first convolution's 520
	// values would otherwise send one or a few values an iteration though
	// sending them whole costs little. 0 means 1.
	Min  int
	hist []uint32 // 1<<16 counters
}

// WarmupFraction returns the fraction a top-k session keeping f sends at
// iteration it with a warm-up of w iterations: WarmupStart·f at iteration
// 0, falling exponentially to f at iteration w, f from then on. Early
// iterations, whose gradients are large and change fast, lose most to the
// delay of error feedback; a denser start costs a few iterations' bytes.
func WarmupFraction(f float64, it, w uint64) float64 {
	if it >= w {
		return f
	}
	return min(1, f*math.Pow(WarmupStart, 1-float64(it)/float64(w)))
}

// WarmupStart is how many times denser than its fraction a top-k session
// with warm-up starts.
const WarmupStart = 4

// NewTopK returns the top-k codec keeping fraction f of the values.
func NewTopK(f float64) *TopK { return &TopK{Fraction: f} }

func (t *TopK) String() string { return "topk:" + strconv.FormatFloat(t.Fraction, 'g', -1, 64) }

// Lossless implements Codec.
func (*TopK) Lossless() bool { return false }

// Format implements Codec.
func (*TopK) Format() Format { return FormatSparse }

// K returns how many values of n the codec keeps.
func (t *TopK) K(n int) int {
	if n == 0 {
		return 0
	}
	return min(n, max(1, t.Min, int(math.Ceil(t.Fraction*float64(n)))))
}

// Append implements Codec.
func (t *TopK) Append(dst []byte, src []float32) []byte {
	k := t.K(len(src))
	thr, atThr := t.threshold(src, k)
	// Count what goes out first: the header holds the count.
	sent := 0
	ties := atThr
	for _, v := range src {
		m := math.Float32bits(v) & 0x7fffffff
		if m == 0 {
			continue
		}
		if m > thr {
			sent++
		} else if m == thr && ties > 0 {
			sent++
			ties--
		}
	}
	dst = appendHeader(dst, FormatSparse, len(src))
	dst = binary.AppendUvarint(dst, uint64(sent))
	prev := -1
	ties = atThr
	for i, v := range src {
		m := math.Float32bits(v) & 0x7fffffff
		if m == 0 {
			continue
		}
		if m > thr || (m == thr && ties > 0) {
			if m == thr {
				ties--
			}
			dst = binary.AppendUvarint(dst, uint64(i-prev-1))
			dst = binary.LittleEndian.AppendUint16(dst, toHalf(v))
			prev = i
		}
	}
	return dst
}

// threshold returns the magnitude bits of the k-th largest magnitude of
// src and how many values of exactly that magnitude are among the k.
// Magnitudes compare as their float bits with the sign cleared (NaNs rank
// above everything: the receiver refuses them).
func (t *TopK) threshold(src []float32, k int) (thr uint32, atThr int) {
	if k == 0 {
		return math.MaxUint32, 0
	}
	if t.hist == nil {
		t.hist = make([]uint32, 1<<16)
	}
	h := t.hist
	clear(h)
	for _, v := range src {
		h[(math.Float32bits(v)&0x7fffffff)>>16]++
	}
	need := k
	hi := 0
	for hi = len(h) - 1; hi > 0; hi-- {
		if int(h[hi]) >= need {
			break
		}
		need -= int(h[hi])
	}
	clear(h)
	for _, v := range src {
		m := math.Float32bits(v) & 0x7fffffff
		if int(m>>16) == hi {
			h[m&0xffff]++
		}
	}
	lo := 0
	for lo = len(h) - 1; lo > 0; lo-- {
		if int(h[lo]) >= need {
			break
		}
		need -= int(h[lo])
	}
	return uint32(hi)<<16 | uint32(lo), need
}

// AppendSparse appends every non-zero value of src in the sparse format:
// how the hub sends the merged update of a top-k session, whose support is
// the union of the workers' (so it is already sparse).
func AppendSparse(dst []byte, src []float32) []byte {
	sent := 0
	for _, v := range src {
		if math.Float32bits(v)&0x7fffffff != 0 {
			sent++
		}
	}
	dst = appendHeader(dst, FormatSparse, len(src))
	dst = binary.AppendUvarint(dst, uint64(sent))
	prev := -1
	for i, v := range src {
		if math.Float32bits(v)&0x7fffffff != 0 {
			dst = binary.AppendUvarint(dst, uint64(i-prev-1))
			dst = binary.LittleEndian.AppendUint16(dst, toHalf(v))
			prev = i
		}
	}
	return dst
}

// minEntry is the fewest bytes one sparse entry takes: a one-byte gap and
// a half float.
const minEntry = 3

func decodeSparse(dst []float32, body []byte) error {
	k, w := binary.Uvarint(body)
	if w <= 0 {
		return fmt.Errorf("%w: sparse payload: bad entry count", ErrMalformed)
	}
	body = body[w:]
	if k > uint64(len(dst)) {
		return fmt.Errorf("%w: sparse payload of %d entries for %d values", ErrMalformed, k, len(dst))
	}
	if k*minEntry > uint64(len(body)) {
		return fmt.Errorf("%w: sparse payload of %d entries in %d bytes (at least %d each)", ErrMalformed, k, len(body), minEntry)
	}
	clear(dst)
	next := uint64(0) // the lowest index the next entry may have
	for e := range k {
		gap, w := binary.Uvarint(body)
		if w <= 0 {
			return fmt.Errorf("%w: sparse entry %d: bad index gap", ErrMalformed, e)
		}
		if gap >= uint64(len(dst))-next {
			return fmt.Errorf("%w: sparse entry %d: index %d+%d beyond the %d values", ErrMalformed, e, next, gap, len(dst))
		}
		i := next + gap
		body = body[w:]
		if len(body) < 2 {
			return fmt.Errorf("%w: sparse entry %d: value cut short", ErrMalformed, e)
		}
		h := binary.LittleEndian.Uint16(body)
		body = body[2:]
		if !halfFinite(h) {
			return fmt.Errorf("%w: sparse entry %d (index %d) is %v", ErrNonFinite, e, i, fromHalf(h))
		}
		dst[i] = fromHalf(h)
		next = i + 1
	}
	if len(body) != 0 {
		return fmt.Errorf("%w: %d bytes after the %d sparse entries", ErrMalformed, len(body), k)
	}
	return nil
}
