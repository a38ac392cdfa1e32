package hub

import (
	"slices"
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
// layer-wise overlap, else one): a member has pushed when every part of it
// has arrived, and a part can be merged as soon as every member has pushed
// it. What a worker pushed counts even if it then leaves the membership.
type barrier struct {
	iter    uint64
	ticks   int
	members map[string]int      // worker id → batch size assigned for iter
	pushes  map[string]*arrival // accepted pushes, by worker id
	bounds  []int               // part j is [bounds[j], bounds[j+1])
	sent    []bool              // parts merged and sent ahead (partial Merged)
	bytesUp int64               // gradient payload bytes accepted
}

// arrival is what one worker pushed for the iteration: the decoded parts
// are copied out of the messages, which belong to the caller of Step.
type arrival struct {
	samples int
	loss    float64
	nanos   int64     // the largest ComputeNanos of its parts
	grad    []float32 // the whole vector; only the parts in have values
	in      []bool    // parts arrived
	count   int       // parts arrived
	state   []float32 // batch-norm statistics; nil when no part had them
}

// parts is the number of parts.
func (b *barrier) parts() int { return len(b.bounds) - 1 }

// done reports whether a has every part.
func (b *barrier) done(a *arrival) bool { return a != nil && a.count == b.parts() }

// reset opens iteration iter with the given members, keeping the maps'
// storage.
func (b *barrier) reset(iter uint64, members map[string]int) {
	b.iter, b.ticks = iter, 0
	b.members = members
	clear(b.pushes)
	if b.pushes == nil {
		b.pushes = map[string]*arrival{}
	}
	b.sent = make([]bool, b.parts())
	b.bytesUp = 0
}

// complete reports whether every member has pushed every part.
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
		loss += float64(a.samples) * a.loss
	}
	if samples > 0 {
		loss /= float64(samples)
	}
	return samples, loss
}

// mergePart writes into dst (part j's length) the sample-weighted mean
// Σ bᵢgᵢ / Σ bᵢ of part j over the workers that pushed it, and returns
// Σ bᵢ (0, and dst zero, when none did). It sums in float64, in worker id
// order, and rounds once per element. acc is scratch of len(dst).
func (b *barrier) mergePart(dst []float32, acc []float64, j int) (samples int) {
	lo := b.bounds[j]
	clear(acc)
	for _, id := range b.ids() {
		a := b.pushes[id]
		if !a.in[j] {
			continue
		}
		w := float64(a.samples)
		for i, g := range a.grad[lo : lo+len(dst)] {
			acc[i] += w * float64(g)
		}
		samples += a.samples
	}
	if samples == 0 {
		clear(dst)
		return 0
	}
	n := float64(samples)
	for i, s := range acc {
		dst[i] = float32(s / n)
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
			acc[j] += w * float64(v)
		}
		n += w
	}
	for j, s := range acc {
		dst[j] = float32(s / n)
	}
	return true
}

// arrivalFor returns id's arrival, creating it for a worker whose first
// part this is.
func (b *barrier) arrivalFor(id string, n int) *arrival {
	a := b.pushes[id]
	if a == nil {
		a = &arrival{grad: make([]float32, n), in: make([]bool, b.parts())}
		b.pushes[id] = a
	}
	return a
}
