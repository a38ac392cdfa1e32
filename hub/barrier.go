package hub

import (
	"slices"

	"github.com/cotrain/cotrain/sync/wire"
)

// barrier is the state of one open iteration: who must push, what arrived,
// and how many ticks have passed since it opened.
//
// Membership is fixed when the iteration opens (every worker that was told a
// batch size for it) and only shrinks: a member leaves, misses the deadline,
// or asks to resync before pushing. A worker that joins while the iteration
// is open waits for its Merged and takes part from the next one, so the
// shares of an iteration always sum to the global batch they were cut from.
type barrier struct {
	iter    uint64
	ticks   int
	members map[string]int      // worker id → batch size assigned for iter
	pushes  map[string]*arrival // accepted pushes, by worker id
}

// arrival is an accepted push: the gradient is copied out of the message,
// which belongs to the caller of Step.
type arrival struct {
	samples int
	loss    float64
	grad    []float32
	state   []float32 // batch-norm statistics; nil when the push had none
}

// reset opens iteration iter with the given members, keeping the maps'
// storage.
func (b *barrier) reset(iter uint64, members map[string]int) {
	b.iter, b.ticks = iter, 0
	b.members = members
	clear(b.pushes)
	if b.pushes == nil {
		b.pushes = map[string]*arrival{}
	}
}

// complete reports whether every member has pushed.
func (b *barrier) complete() bool {
	for id := range b.members {
		if _, ok := b.pushes[id]; !ok {
			return false
		}
	}
	return true
}

// missing returns the members that have not pushed, sorted.
func (b *barrier) missing() []string {
	var out []string
	for id := range b.members {
		if _, ok := b.pushes[id]; !ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// merge writes into dst the sample-weighted mean Σ bᵢgᵢ / Σ bᵢ of the
// arrivals and returns Σ bᵢ and the sample-weighted mean loss. It sums in
// float64, in a fixed order (worker ids sorted), and rounds once per element,
// so the result depends only on the arrivals, never on map order or on the
// order the pushes came in. acc is scratch of len(dst).
func (b *barrier) merge(dst []float32, acc []float64) (samples int, loss float64) {
	ids := make([]string, 0, len(b.pushes))
	for id := range b.pushes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	clear(acc)
	for _, id := range ids {
		a := b.pushes[id]
		w := float64(a.samples)
		for j, g := range a.grad {
			acc[j] += w * float64(g)
		}
		samples += a.samples
		loss += w * a.loss
	}
	n := float64(samples)
	for j, s := range acc {
		dst[j] = float32(s / n)
	}
	return samples, loss / n
}

// mergeState writes into dst the sample-weighted mean of the batch-norm
// statistics of the arrivals that carried them, summed in float64 in worker
// id order like merge, and reports whether any did. Averaging the running
// means and variances of workers that started the iteration from the same
// statistics gives the same moving average as one update with the mean of
// their batch statistics.
func (b *barrier) mergeState(dst []float32) bool {
	ids := make([]string, 0, len(b.pushes))
	for id, a := range b.pushes {
		if a.state != nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return false
	}
	slices.Sort(ids)
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

// store copies a push into the barrier: the message stays the caller's.
func (b *barrier) store(id string, m *wire.Push) {
	a := &arrival{samples: m.Samples, loss: float64(m.Loss), grad: slices.Clone([]float32(m.Gradient))}
	if len(m.State) > 0 {
		a.state = slices.Clone([]float32(m.State))
	}
	b.pushes[id] = a
}
