package solver

import (
	"crypto/sha256"
	"fmt"
)

// PlanDigest hashes the training and inference plans of n: for every node,
// whether Backward runs it and what it reads, where its tensors live, and
// the sizes of the shared buffers. Tests compare it with the digest of the
// plan before a change to the planner.
func (n *Net) PlanDigest() string {
	h := sha256.New()
	for _, nd := range n.nodes {
		fmt.Fprintln(h, nd.runs, nd.readIn, nd.readOut, nd.infer, nd.direct, nd.oslot, nd.dslot, nd.sslot, nd.eslot)
	}
	fmt.Fprintln(h, n.trainSize, n.evalSize)
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}

// Cuts lists the nodes after which a replayed segment may start.
func (n *Net) Cuts() []int { return n.cuts() }

// SetReplayed replays the node ranges given (from, to, both included; each
// must start after a cut or at 0 and end at a cut or the last node), as
// SetMemoryBudget's plans do (packed: plan.go's packing), with no budget.
func (n *Net) SetReplayed(ranges [][2]int) {
	var segs []segment
	for _, r := range ranges {
		if sg := (segment{from: r[0], to: r[1]}); !n.hasStatic(sg) {
			segs = append(segs, sg) // the static prefix is never replayed, as SetMemoryBudget's
		}
	}
	n.packed = len(segs) > 0 // as SetMemoryBudget's plans
	n.setSegments(segs)
	n.replanTrain()
	if len(segs) > 0 && len(n.segs) == 0 {
		panic("solver: SetReplayed: the segments do not start and end at cuts")
	}
}

// Replayed counts the nodes of live replayed segments.
func (n *Net) Replayed() int {
	k := 0
	for _, sg := range n.segs {
		if sg.live {
			k += sg.to - sg.from + 1
		}
	}
	return k
}

// MaxLive is the most elements per sample live at once in the training
// step's plan, and the plan's buffers' elements per sample.
func (n *Net) MaxLive() (live, planned int) {
	end := 0
	for _, l := range n.lives {
		end = max(end, l.to)
	}
	for s := 0; s <= end; s++ {
		sum := 0
		for _, l := range n.lives {
			if l.from <= s && s <= l.to {
				sum += l.size
			}
		}
		live = max(live, sum)
	}
	for _, x := range n.trainSize {
		planned += x
	}
	return live, planned
}

// Refold folds the frozen prefix's batch norm now, if the folded weights
// are stale (fold.go): for BenchmarkRefold, which times the fold alone.
func (n *Net) Refold() { n.refold() }
