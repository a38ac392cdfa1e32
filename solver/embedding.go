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
// The lookup is composed from the backend's Copy and Axpy on views of the
// table's rows, so it runs on every backend with no kernel of its own: the
// ids are brought to the host (Download: a copy on the CPU backend), checked,
// and each position's row copied; Backward adds each position's gradient
// into its id's row in position order, so repeated ids sum
// deterministically. The ids must be in range: a network's caller checks
// them with Net.CheckInput (or this layer's CheckIDs) before Forward, which
// panics on an id out of range before any kernel has run (our bug: the
// check was skipped).
type Embedding struct {
	Base
	Vocab, Dim int
	T          int // ids per sample, from Setup

	rows, grows []gpu.Buffer // views of the table's and its gradient's rows, from Bind
	ids         []float32    // the last Forward's ids (host), capacity cap·T
	pos         []int32      // the same as row indices, checked
	emb, demb   gpu.Buffer   // cap·T×Dim staging for the lookup and the gradient
	embPos      []gpu.Buffer // views of emb's rows, one per position
	dembPos     []gpu.Buffer
	embN, dembN gpu.Buffer // views of emb and demb for the current batch size
	capN, curN  int
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
	return Shape{C: e.T, H: 1, W: e.Dim}, nil
}

// Params implements Layer. PyTorch draws the table from N(0, 1).
func (e *Embedding) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Dims: []int{e.Vocab, e.Dim}, Init: InitNormal}}
}

// Bind implements Layer: one view per row of the table and its gradient.
func (e *Embedding) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	e.Base.Bind(b, params, grads, state)
	e.rows = make([]gpu.Buffer, e.Vocab)
	e.grows = make([]gpu.Buffer, e.Vocab)
	for v := range e.Vocab {
		e.rows[v] = b.View(params[0], v*e.Dim, e.Dim)
		e.grows[v] = b.View(grads[0], v*e.Dim, e.Dim)
	}
}

// Resize implements Layer: staging for n samples.
func (e *Embedding) Resize(b gpu.Backend, n int) {
	if n <= e.capN {
		return
	}
	e.capN, e.curN = n, 0
	m := n * e.T
	e.ids = make([]float32, m)
	e.pos = make([]int32, m)
	e.emb, e.demb = b.Alloc(m*e.Dim), b.Alloc(m*e.Dim)
	e.embPos, e.dembPos = make([]gpu.Buffer, m), make([]gpu.Buffer, m)
	for i := range m {
		e.embPos[i] = b.View(e.emb, i*e.Dim, e.Dim)
		e.dembPos[i] = b.View(e.demb, i*e.Dim, e.Dim)
	}
}

// batch points the whole-batch views at n samples.
func (e *Embedding) batch(b gpu.Backend, n int) {
	if n == e.curN {
		return
	}
	e.curN = n
	e.embN = b.View(e.emb, 0, n*e.T*e.Dim)
	e.dembN = b.View(e.demb, 0, n*e.T*e.Dim)
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
	e.batch(p.B, p.N)
	ids := e.ids[:m]
	p.B.Download(ids, in[0])
	if err := e.CheckIDs(ids); err != nil {
		panic(err.Error() + " (the caller must check its input: Net.CheckInput)")
	}
	for i, v := range ids {
		e.pos[i] = int32(v)
	}
	for i := range m {
		p.B.Copy(e.embPos[i], e.rows[e.pos[i]])
	}
	p.B.Copy(out, e.embN)
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
	e.batch(p.B, p.N)
	p.B.Copy(e.dembN, dout)
	p.B.Fill(e.G[0], 0)
	for i := range p.N * e.T {
		p.B.Axpy(1, e.dembPos[i], e.grows[e.pos[i]])
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
