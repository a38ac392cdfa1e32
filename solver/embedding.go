package solver

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// Embedding maps token ids to learned vectors (PyTorch's nn.Embedding): its
// input holds ids as float32 values (data.Text writes them so; every id
// below 2^24 is exact), its weight is Vocab×Dim, and each sample's T ids
// (the input's whole per-sample size) become a T×Dim sequence, Shape{T, 1,
// Dim}, the layout LSTM and GRU read (batch first, N×T×Dim).
//
// The ids are brought to the host (Download: a copy on the CPU backend)
// and checked. A backend with row kernels (gpu.RowGatherer: CPU, OpenCL)
// then looks every position up in one call and Backward adds each
// position's gradient into its id's row in one more; elsewhere each row is
// copied with CopyStrided at its id's offset (a launch per token, which the
// OpenCL profile showed at 29% of an lstm-lm step on PoCL before the
// kernels). Either way the rows of a repeated id sum in position order, so
// the gradient is deterministic, and no view of a row is made, so a large
// vocabulary costs its table and nothing per word. The ids must be in
// range: a network's caller checks them with Net.CheckInput (or this
// layer's CheckIDs) before Forward, which panics on an id out of range
// before any kernel has run (our bug: the check was skipped).
type Embedding struct {
	Base
	Vocab, Dim int
	T          int // ids per sample, from Setup

	ids  []float32 // the last Forward's ids (host), capacity for Resize's n
	pos  []int32   // the same as row indices, checked
	dims []int     // {Dim}: one row, for CopyStrided
	unit []int     // {1}
	// With a gpu.RowGatherer: the last Forward's ids on the backend
	// (capacity, and a view of the current batch's).
	dids, didsN gpu.Buffer
	curN        int
}

// NewEmbedding returns an embedding of vocab ids into dim-vectors.
func NewEmbedding(name string, vocab, dim int) *Embedding {
	return &Embedding{Base: Base{LayerName: name}, Vocab: vocab, Dim: dim}
}

// Kind implements Layer.
func (*Embedding) Kind() string { return "embedding" }

// Setup implements Layer: every element of a sample is an id.
func (e *Embedding) Setup(in []Shape) (Shape, error) {
	s, err := one("embedding", in)
	if err != nil {
		return Shape{}, err
	}
	if e.Vocab <= 0 || e.Dim <= 0 {
		return Shape{}, fmt.Errorf("solver: embedding %s: vocabulary %d, dimension %d: want positive", e.LayerName, e.Vocab, e.Dim)
	}
	if e.Vocab > 1<<24 {
		return Shape{}, fmt.Errorf("solver: embedding %s: vocabulary %d exceeds 2^24 (ids travel as float32)", e.LayerName, e.Vocab)
	}
	e.T = s.Size()
	e.dims, e.unit = []int{e.Dim}, []int{1}
	return Shape{C: e.T, H: 1, W: e.Dim}, nil
}

// Params implements Layer. PyTorch draws the table from N(0, 1).
func (e *Embedding) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Dims: []int{e.Vocab, e.Dim}, Init: InitNormal}}
}

// Resize implements Layer: the host ids of n samples.
func (e *Embedding) Resize(b gpu.Backend, n int) {
	if n*e.T > len(e.ids) {
		e.ids, e.pos = make([]float32, n*e.T), make([]int32, n*e.T)
		if _, ok := b.(gpu.RowGatherer); ok {
			e.dids, e.curN = b.Alloc(n*e.T), 0
		}
	}
}

// row is the copy of one Dim-row from src at srcOff to dst at dstOff.
func (e *Embedding) row(dstOff, srcOff int) gpu.StridedGeom {
	return gpu.StridedGeom{Dims: e.dims, Dst: e.unit, Src: e.unit, DstOff: dstOff, SrcOff: srcOff}
}

// CheckIDs reports the first element of x (ids, as float32) that is not a
// whole number in [0, Vocab).
func (e *Embedding) CheckIDs(x []float32) error {
	for i, v := range x {
		if v != float32(math.Trunc(float64(v))) || v < 0 || v >= float32(e.Vocab) {
			return fmt.Errorf("solver: embedding %s: id %g at position %d: want a whole number in [0, %d)", e.LayerName, v, i, e.Vocab)
		}
	}
	return nil
}

// CheckInput implements InputChecker.
func (e *Embedding) CheckInput(x []float32) error { return e.CheckIDs(x) }

// Forward implements Layer. x: N×T ids; y: N×T×Dim.
func (e *Embedding) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	m := p.N * e.T
	ids := e.ids[:m]
	p.B.Download(ids, in[0])
	if err := e.CheckIDs(ids); err != nil {
		panic(err.Error() + " (the caller must check its input: Net.CheckInput)")
	}
	if g, ok := p.B.(gpu.RowGatherer); ok {
		if p.N != e.curN {
			e.curN, e.didsN = p.N, p.B.View(e.dids, 0, m)
		}
		p.B.Copy(e.didsN, in[0]) // kept for Backward: the next upload may reuse in[0]
		g.GatherRows(out, e.P[0], e.didsN, e.Dim)
		return
	}
	for i, v := range ids {
		e.pos[i] = int32(v)
	}
	for i := range m {
		p.B.CopyStrided(out, e.P[0], e.row(i*e.Dim, int(e.pos[i])*e.Dim), false)
	}
}

// BackwardReads implements BackwardReader: the ids are kept from Forward.
func (*Embedding) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: dW[id] = Σ over the positions holding id of
// dy at that position, summed in position order. The ids get no gradient;
// din[0], when asked for, is set to zero.
func (e *Embedding) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	if din[0] != nil {
		p.B.Fill(din[0], 0)
	}
	if !paramGrads {
		return
	}
	p.B.Fill(e.G[0], 0)
	if g, ok := p.B.(gpu.RowGatherer); ok {
		g.ScatterAddRows(e.G[0], dout, e.didsN, e.Dim)
		return
	}
	for i := range p.N * e.T {
		p.B.CopyStrided(e.G[0], dout, e.row(int(e.pos[i])*e.Dim, i*e.Dim), true)
	}
}

// InputChecker is implemented by layers that can refuse a network input
// their Forward could not take (an embedding's ids out of range): the
// network's caller runs Net.CheckInput on the host values before Forward.
type InputChecker interface {
	// CheckInput reports what is wrong with x, the host values of the
	// input batch this layer reads (every sample, one after another).
	CheckInput(x []float32) error
}

// CheckInput runs every layer that reads the network input and implements
// InputChecker on x, the host values of a batch: an error means Forward
// must not be given x (the ids of an embedding out of its vocabulary).
func (n *Net) CheckInput(x []float32) error {
	for _, nd := range n.nodes {
		c, ok := nd.layer.(InputChecker)
		if !ok {
			continue
		}
		for _, j := range nd.inputs {
			if j == Input {
				if err := c.CheckInput(x); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// scratch implements batchScratcher: the ids of n samples, on the host as
// float32 and int32 and on the device (counted whether or not the backend
// gathers rows).
func (e *Embedding) scratch(n int) int { return 3 * n * e.T }
