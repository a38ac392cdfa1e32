package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// Caching the frozen prefix's output across epochs.
//
// The static prefix is the part of the network that depends on nothing but
// the input and frozen, inference-mode layers: a node is static when it
// runs as inference (node.infer: no Backward reaches it, and it is not
// dropout) and every input is the network's input or a static node. For a
// given sample its output is a function of that sample alone (batch norm
// there uses its running statistics, and no layer mixes samples), and of
// weights that do not move, so when the same sample comes again (the next
// epoch, with a data pipeline that does not augment) it is the same. The
// frontier is the static nodes that a non-static node reads (with
// FreezeAllButLast(1), the pooled features before the classifier, or the
// input of the classifier's dropout): what the rest of the step needs of
// the prefix.
//
// Trainer.GradientIDs hands the samples' identities (their indices in the
// data set) to the net. A training Forward of a batch whose samples are
// all cached fills the frontier's outputs from the cache and runs only the
// non-static nodes: the input is not even uploaded. Any other batch runs
// the whole network and then stores the frontier rows of the samples not
// yet cached, while the cache holds less than its limit. The values kept
// are the bits the prefix computed, so a step that reads them computes
// what it would have computed from them; whether that is the step without
// the cache, bit for bit, depends on the backend's prefix computing a
// sample's output with the same bits whatever the batch around it
// (TestPrefixCacheSameBits checks it on the CPU).
//
// The cache is the net's, in host memory, and emptied whenever what it
// holds may no longer be the prefix's output: a new plan (a freeze, the
// folding or frozen-inference switches), InitParams, InitState,
// ParamsChanged. A caller whose samples' values change for the same
// identity (random augmentation, a data set replaced) must not pass
// identities, or must call ParamsChanged.

// prefixCache is a Net's cache of the static prefix's frontier outputs.
type prefixCache struct {
	limit int           // bytes of rows at most
	rows  map[int64]int // sample identity -> offset of its row in data
	data  []float32     // rows of rowLen values, one after another
	stage []float32     // a batch's frontier values, staged for a transfer
	hits  int64         // samples served from the cache
	miss  int64         // samples computed
}

// PrefixCacheStats reports the cache's use since it was last emptied.
type PrefixCacheStats struct {
	Samples int   // samples cached
	Bytes   int   // bytes their rows take
	Hits    int64 // samples whose prefix a training Forward skipped
	Misses  int64 // samples it computed
	RowLen  int   // float32 values kept per sample (the frontier's size); 0: no static prefix
}

// SetPrefixCache keeps the static prefix's output of up to limit bytes of
// samples across training Forwards that pass sample identities
// (Trainer.GradientIDs, Trainer.StepIDs); 0 turns the cache off and frees
// it. A new limit empties it.
func (n *Net) SetPrefixCache(limit int) {
	if limit < 0 {
		panic(fmt.Sprintf("solver: SetPrefixCache(%d): want a size of at least 0 bytes", limit))
	}
	n.cache = nil
	if limit > 0 {
		n.cache = &prefixCache{limit: limit}
		n.cache.clear()
	}
}

// PrefixCache reports the prefix cache's use; all zero without one.
func (n *Net) PrefixCache() PrefixCacheStats {
	c := n.cache
	if c == nil {
		return PrefixCacheStats{}
	}
	return PrefixCacheStats{Samples: len(c.rows), Bytes: 4 * len(c.data), Hits: c.hits, Misses: c.miss, RowLen: n.rowLen}
}

// clear empties the cache, keeping its limit.
func (c *prefixCache) clear() {
	c.rows, c.data = map[int64]int{}, nil
	c.hits, c.miss = 0, 0
}

// prefixStale marks everything derived from the frozen prefix's weights
// stale: the folded weights and the cached outputs.
func (n *Net) prefixStale() {
	n.folded, n.stateSet = false, nil
	if n.cache != nil {
		n.cache.clear()
	}
}

// planStatic sets every node's static flag and the frontier (n.frontier,
// n.rowLen) from node.infer: planTrain calls it once that is set. No
// frontier (rowLen 0) when nothing is static or everything is (the last
// node static: nothing learns).
func (n *Net) planStatic() {
	n.frontier, n.rowLen = n.frontier[:0], 0
	for i := range n.nodes {
		nd := &n.nodes[i]
		nd.static = nd.infer
		for _, j := range nd.inputs {
			if j >= 0 && !n.nodes[j].static {
				nd.static = false
			}
		}
	}
	last := len(n.nodes) - 1
	if n.nodes[last].static {
		return
	}
	for i := range n.nodes {
		if !n.nodes[i].static {
			continue
		}
		for _, c := range n.nodes[i+1:] {
			if !c.static && containsNode(c.inputs, i) {
				n.frontier = append(n.frontier, i)
				n.rowLen += n.nodes[i].shape.Size()
				break
			}
		}
	}
}

func containsNode(inputs []int, i int) bool {
	for _, j := range inputs {
		if j == i {
			return true
		}
	}
	return false
}

// cachedForward is a training Forward of the batch of samples ids served
// from the prefix cache: when every one is cached, it stages their rows,
// runs the non-static nodes with the frontier's outputs set from them, and
// returns the network's output and true; otherwise it does nothing and
// returns false.
func (n *Net) cachedForward(ids []int64) (gpu.Buffer, bool) {
	c := n.cache
	if c == nil || n.rowLen == 0 || len(ids) == 0 {
		return nil, false
	}
	for _, id := range ids {
		if _, ok := c.rows[id]; !ok {
			return nil, false
		}
	}
	batch := len(ids)
	n.beginForward(batch, true)
	c.stage = growFloats(c.stage, batch*n.rowLen)
	at := 0
	for _, f := range n.frontier {
		size := n.nodes[f].shape.Size()
		part := c.stage[at*batch : at*batch+batch*size]
		for k, id := range ids {
			off := c.rows[id] + at
			copy(part[k*size:(k+1)*size], c.data[off:off+size])
		}
		at += size
	}
	c.hits += int64(batch)
	return n.runNodes(nil, batch, true, runFromRows), true
}

// forwardStore is a training Forward of x, the batch of samples ids, that
// keeps the frontier rows of the samples not cached yet while the cache has
// room.
func (n *Net) forwardStore(x gpu.Buffer, ids []int64) gpu.Buffer {
	batch := len(ids)
	c := n.cache
	if c == nil || n.rowLen == 0 {
		return n.Forward(x, batch, true)
	}
	c.miss += int64(batch)
	fresh := 0
	for _, id := range ids {
		if _, ok := c.rows[id]; !ok {
			fresh++
		}
	}
	if fresh == 0 || 4*(len(c.data)+n.rowLen) > c.limit {
		return n.Forward(x, batch, true)
	}
	if x.Len() != batch*n.In.Size() {
		panic(fmt.Sprintf("solver: Forward: input of %d elements for %d samples of %v", x.Len(), batch, n.In))
	}
	n.beginForward(batch, true)
	c.stage = growFloats(c.stage, batch*n.rowLen)
	out := n.runNodes(x, batch, true, runToRows)
	for k, id := range ids {
		if _, ok := c.rows[id]; ok || 4*(len(c.data)+n.rowLen) > c.limit {
			continue
		}
		c.rows[id] = len(c.data)
		at := 0
		for _, f := range n.frontier {
			size := n.nodes[f].shape.Size()
			c.data = append(c.data, c.stage[at*batch+k*size:at*batch+(k+1)*size]...)
			at += size
		}
	}
	return out
}

// stageFrontier moves frontier node i's output, if i is one, between its
// buffer and its part of the cache's staged rows: down after its step
// (down true), up in its place.
func (n *Net) stageFrontier(i, batch int, down bool) {
	at := 0
	for _, f := range n.frontier {
		size := n.nodes[f].shape.Size()
		if f != i {
			at += size
			continue
		}
		part := n.cache.stage[at*batch : at*batch+batch*size]
		if down {
			n.B.Download(part, n.nodes[f].out)
		} else {
			n.B.Upload(n.nodes[f].out, part)
		}
		return
	}
}

// growFloats returns s with length n, reallocated only when its capacity
// is short.
func growFloats(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}
