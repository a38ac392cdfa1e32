package hub

import (
	"slices"

	"github.com/cotrain/cotrain/hub/internal/avg"
)

// barrier is the state of one open iteration: who must push, what arrived,
// and how many ticks have passed since it opened.
//
// Membership is fixed when the iteration opens (every worker that was told a
// batch size for it) and only shrinks: a member leaves, misses the deadline,
// or asks to resync before it has pushed everything. A worker that joins
// while the iteration is open waits for its Merged and takes part from the
// next one, so the shares of an iteration always sum to the global batch
// they were cut from.
//
// The gradient comes in parts (Session.Parts: one per layer under
// layer-wise overlap, else one; parts in frozen layers are zero and never
// come): a member has pushed when every other part of it has arrived, and
// a part can be merged as soon as every member has pushed it. What a
// worker pushed counts even if it then leaves the membership.
type barrier struct {
	iter     uint64
	ticks    int
	deadline int                 // ticks after which the members missing are late (deadline.go)
	members  map[string]int      // worker id → batch size assigned for iter
	pushes   map[string]*arrival // accepted pushes, by worker id
	bounds   []int               // part j is [bounds[j], bounds[j+1])
	zero     []bool              // parts that lie in frozen layers: never pushed nor merged
	live     int                 // parts that are not zero: what a member pushes
	sent     []bool              // parts merged and sent ahead (partial Merged)
	bytesUp  int64               // gradient payload bytes accepted
	// free holds the arrivals of closed iterations for reuse, with their
	// decode buffers: allocating (and zeroing) one per worker and
	// iteration cost 110 MB an iteration for 64 lenet-caffe workers.
	free []*arrival
}

// arrival is what one worker pushed for the iteration. A float32 session's
// parts are the pushes' own vectors, kept without a copy (Core.Step's
// contract); a compressed session's are decoded into buf, which the
// arrival keeps from one iteration to the next.
type arrival struct {
	samples int
	loss    float64
	nanos   int64       // the largest ComputeNanos of its parts
	part    [][]float32 // part j's values, when in[j]
	buf     []float32   // decoded values of compressed parts; nil until needed
	in      []bool      // parts arrived
	count   int         // parts arrived
	state   []float32   // batch-norm statistics; nil when no part had them
}

// parts is the number of parts.
func (b *barrier) parts() int { return len(b.bounds) - 1 }

// done reports whether a has every part that is not zero.
func (b *barrier) done(a *arrival) bool { return a != nil && a.count == b.live }

// reset opens iteration iter with the given members, keeping the maps'
// storage.
func (b *barrier) reset(iter uint64, members map[string]int) {
	b.iter, b.ticks = iter, 0
	b.members = members
	for _, a := range b.pushes {
		b.release(a)
	}
	clear(b.pushes)
	if b.pushes == nil {
		b.pushes = map[string]*arrival{}
	}
	b.sent = make([]bool, b.parts())
	b.bytesUp = 0
}

// complete reports whether every member has pushed every part that is not
// zero.
func (b *barrier) complete() bool {
	for id := range b.members {
		if !b.done(b.pushes[id]) {
			return false
		}
	}
	return true
}

// partComplete reports whether every member has pushed part j (and there
// is a member).
func (b *barrier) partComplete(j int) bool {
	if len(b.members) == 0 {
		return false
	}
	for id := range b.members {
		if a := b.pushes[id]; a == nil || !a.in[j] {
			return false
		}
	}
	return true
}

// missing returns the members that have not pushed every part, sorted.
func (b *barrier) missing() []string {
	var out []string
	for id := range b.members {
		if !b.done(b.pushes[id]) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// ids returns the ids of the arrivals, sorted: every sum over them uses
// this order, so results never depend on map order or arrival order.
func (b *barrier) ids() []string {
	ids := make([]string, 0, len(b.pushes))
	for id := range b.pushes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// totals returns the samples and the sample-weighted mean loss of every
// worker that pushed anything.
func (b *barrier) totals() (samples int, loss float64) {
	for _, id := range b.ids() {
		a := b.pushes[id]
		samples += a.samples
		loss += float64(float64(a.samples) * a.loss) // float64(): not fused on any target
	}
	if samples > 0 {
		loss /= float64(samples)
	}
	return samples, loss
}

// mergeBlock is the number of values mergePart sums at a time: its
// float64 accumulator (16 KiB) stays in the first-level cache while every
// worker's slice of the block is added in, and each gradient is read once.
const mergeBlock = 2048

// mergePart writes into dst (part j's length) the sample-weighted mean
// Σ bᵢgᵢ / Σ bᵢ of part j over the workers that pushed it, and returns
// Σ bᵢ (0, and dst zero, when none did). It sums in float64, in worker id
// order, and rounds once per element: the bits depend neither on the
// order the pushes came in nor on the processor's vector width. acc is
// scratch of at least mergeBlock values.
func (b *barrier) mergePart(dst []float32, acc []float64, j int) (samples int) {
	var in []*arrival
	for _, id := range b.ids() {
		if a := b.pushes[id]; a.in[j] {
			in = append(in, a)
			samples += a.samples
		}
	}
	if samples == 0 {
		clear(dst)
		return 0
	}
	n := float64(samples)
	for off := 0; off < len(dst); off += mergeBlock {
		end := min(off+mergeBlock, len(dst))
		blk := acc[:end-off]
		clear(blk)
		// Four workers at a time in one pass, the rest one by one: the
		// same additions in the same order either way.
		k := 0
		for ; k+4 <= len(in); k += 4 {
			var w [4]float64
			var src [4][]float32
			for q, a := range in[k : k+4] {
				w[q], src[q] = float64(a.samples), a.part[j][off:end]
			}
			avg.AddScaled4(blk, &w, &src)
		}
		for _, a := range in[k:] {
			avg.AddScaled(blk, float64(a.samples), a.part[j][off:end])
		}
		avg.Mean(dst[off:end], blk, n)
	}
	return samples
}

// mergeState writes into dst the sample-weighted mean of the batch-norm
// statistics of the arrivals that carried them, summed in float64 in worker
// id order like mergePart, and reports whether any did. Averaging the
// running means and variances of workers that started the iteration from
// the same statistics gives the same moving average as one update with the
// mean of their batch statistics.
func (b *barrier) mergeState(dst []float32) bool {
	var ids []string
	for _, id := range b.ids() {
		if b.pushes[id].state != nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return false
	}
	acc := make([]float64, len(dst))
	n := 0.0
	for _, id := range ids {
		a := b.pushes[id]
		w := float64(a.samples)
		for j, v := range a.state {
			acc[j] += float64(w * float64(v)) // float64(): not fused on any target
		}
		n += w
	}
	for j, s := range acc {
		dst[j] = float32(s / n)
	}
	return true
}

// arrival returns id's arrival and whether it is new: one from an
// earlier part of this iteration, or else a cleared one taken from the
// free list (or made) that is not yet id's. A caller that accepts the push
// adds a new one with keep; one that refuses it hands it back with
// release.
func (b *barrier) arrival(id string) (a *arrival, fresh bool) {
	if a := b.pushes[id]; a != nil {
		return a, false
	}
	if k := len(b.free); k > 0 {
		a, b.free = b.free[k-1], b.free[:k-1]
	} else {
		a = &arrival{}
	}
	k := b.parts()
	a.in = slices.Grow(a.in[:0], k)[:k]
	clear(a.in)
	a.part = slices.Grow(a.part[:0], k)[:k]
	clear(a.part)
	a.samples, a.loss, a.nanos, a.count, a.state = 0, 0, 0, 0, nil
	return a, true
}

// keep records a (from arrival) as id's.
func (b *barrier) keep(id string, a *arrival) { b.pushes[id] = a }

// release puts an arrival no longer needed on the free list, dropping the
// pushes' vectors it held.
func (b *barrier) release(a *arrival) {
	clear(a.part)
	a.state = nil
	b.free = append(b.free, a)
}
