package solver

import (
	"math/rand/v2"
	"testing"
)

// packing never lets two tensors whose lives overlap overlap in memory,
// aligns every offset, and needs at least what is live at the busiest step
// (and, on these lives, never more than sharing's buffers).
func TestPackingKeepsLiveTensorsApart(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	for trial := 0; trial < 300; trial++ {
		ts := make([]life, 1+r.IntN(40))
		steps := 1 + r.IntN(20)
		for i := range ts {
			from := r.IntN(steps)
			ts[i] = life{from, from + r.IntN(6), r.IntN(200)}
		}
		off, size := packing(ts)
		busiest := 0
		for s := 0; s <= steps+6; s++ {
			live := 0
			for _, l := range ts {
				if l.from <= s && s <= l.to {
					live += l.size
				}
			}
			busiest = max(busiest, live)
		}
		if len(size) != 1 || size[0] < busiest {
			t.Fatalf("trial %d: buffer sizes %v, the busiest step has %d elements live", trial, size, busiest)
		}
		for a := range ts {
			if off[a]%packAlign != 0 || off[a]+ts[a].size > size[0] {
				t.Fatalf("trial %d: tensor %d of %d at %d in a buffer of %d", trial, a, ts[a].size, off[a], size[0])
			}
			for b := a + 1; b < len(ts); b++ {
				time := ts[a].from <= ts[b].to && ts[b].from <= ts[a].to
				space := off[a] < off[b]+ts[b].size && off[b] < off[a]+ts[a].size
				if time && space && ts[a].size > 0 && ts[b].size > 0 {
					t.Fatalf("trial %d: tensors %v at %d and %v at %d overlap", trial, ts[a], off[a], ts[b], off[b])
				}
			}
		}
	}
}
