package hub

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/hub/internal/avg"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/wire"
)

// Compression and layer-wise overlap: the gradient's codec and parts.
//
// The session's codec (Config.Compression) encodes every Push from the
// workers and every Merged from the hub. The hub decodes each pushed part
// into the arrival (refusing it whole if it does not decode), merges in
// float32 from those decoded values, and encodes the merged part with the
// same codec — top-k sessions send the merged part's non-zeros, the union
// of the workers' supports, sparse (compress.AppendSparse). It then applies
// the values its own payload decodes to, not the ones it encoded: every
// worker decodes the same bytes, so all nodes step with the same bits
// whatever the codec loses.
//
// Under Config.Overlap the gradient is split into one part per layer that
// has parameters (PartBounds). Workers push each part as soon as their
// backward pass has produced it, last layer first; as soon as every member
// of the iteration has pushed part j, the hub merges it and sends it ahead
// in a partial Merged, so that it crosses the network while the workers
// still compute the layers below. The last Merged of the iteration carries
// the remaining part with the batch sizes and the hash; the step is taken
// then. A worker that registers or resyncs while the iteration is open gets
// the parts sent ahead again after its state.
//
// Parts that lie wholly in frozen layers (SessionParts, Session.ZeroParts)
// are zero on every node: workers do not push them, the barrier does not
// wait for them, no Merged carries them, and every node's update keeps
// zeros there (the optimizer skips frozen ranges anyway). Fine-tuning the
// last layers then sends only their gradient, with or without overlap.

// ErrBadPart and ErrBadPayload refuse a push whose part or encoding does not
// match the session.
var (
	ErrBadPart    = errors.New("hub: push of a part the session does not have")
	ErrBadPayload = errors.New("hub: gradient payload does not match the session's codec")
)

// NodeOptimizer names an optimizer and its hyper-parameters: what the
// session was asked for, and what its nodes step with (ConfigureTopK).
type NodeOptimizer struct {
	Name                  string // "sgd" or "adam"
	Momentum, WeightDecay float64
	Nesterov              bool
}

// ConfigureTopK tunes cfg for its compression, given the optimizer asked
// for, and returns the optimizer every node must step with. For a top-k
// session it sets TopKMin (TopKMinValues) and TopKWarmup
// (TopKWarmupIterations), and with SGD momentum (no Nesterov) moves the
// momentum onto the workers (WorkerMomentum, momentum correction): the
// nodes get SGD with momentum 0 and the same weight decay. Nodes that
// applied momentum to top-k's sparse, delayed updates would amplify each
// late spike over the following iterations (docs/compression.md measures
// it). Adam, Nesterov and other codecs keep the optimizer on the nodes as
// asked: Adam correction on the workers (WorkerBeta2, set by hand with
// AdamBeta1, AdamBeta2, AdamEps) measured no better than Adam on the nodes
// over three seeds and sends 2% more bytes up (docs/compression.md).
func ConfigureTopK(cfg *Config, want NodeOptimizer) (NodeOptimizer, error) {
	codec, err := compress.Parse(cfg.Compression)
	if err != nil {
		return want, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if codec.Format() != compress.FormatSparse {
		return want, nil
	}
	cfg.TopKMin, cfg.TopKWarmup = TopKMinValues, TopKWarmupIterations
	if want.Name == "sgd" && want.Momentum > 0 && !want.Nesterov {
		cfg.WorkerMomentum = float32(want.Momentum)
		want.Momentum = 0
	}
	return want, nil
}

// AdamBeta1, AdamBeta2 and AdamEps are solver.NewAdam's hyper-parameters,
// for Adam correction on the workers (Config.WorkerBeta2; the nodes then
// step with SGD, momentum 0 and weight decay 0, at Adam's learning rate).
const (
	AdamBeta1 = 0.9
	AdamBeta2 = 0.999
	AdamEps   = 1e-8
)

// TopKMinValues and TopKWarmupIterations are ConfigureTopK's choices:
// lenet-caffe's first convolution (520 values) and last layer (5,010)
// send half and a twentieth of their values, a few hundred bytes, and the
// first 20 iterations start 4 times denser; both together cost about a
// fifth more bytes up and recover most of what top-k lost
// (docs/compression.md).
const (
	TopKMinValues        = 256
	TopKWarmupIterations = 20
)

// setupParts sets the core's codec and parts from the config.
func (c *Core) setupParts() error {
	codec, err := compress.Parse(c.cfg.Compression)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.codec = codec
	c.session.Compression = codec.String()
	// The master's optimizer was checked against these (checkNodeOptimizer,
	// master.go).
	if m := c.cfg.WorkerMomentum; m > 0 || c.cfg.WorkerBeta2 > 0 {
		c.session.WorkerMomentum = m
		c.session.WorkerBeta2, c.session.WorkerEps = c.cfg.WorkerBeta2, c.cfg.WorkerEps
		c.session.WorkerWeightDecay = c.cfg.WorkerWeightDecay
	}
	c.session.TopKMin, c.session.TopKWarmup = c.cfg.TopKMin, c.cfg.TopKWarmup
	n := c.model.params
	starts, zero := slices.Clone(c.model.starts), c.model.zero
	if len(starts) > 1 {
		c.session.Parts = slices.Clone(starts)
	}
	c.session.ZeroParts = zero
	c.bar.bounds = append(starts, n)
	c.bar.zero = make([]bool, len(starts))
	for _, j := range zero {
		c.bar.zero[j] = true
	}
	c.bar.live = len(starts) - len(zero)
	c.merged = make([]float32, n)
	c.applied = make([]float32, n)
	return nil
}

// decodePush checks part m.Part of a push and returns its values and its
// index: a float32 session's are the push's own vector, a compressed
// session's are decoded into a's buffer (in the part's range). On error
// nothing that anyone reads changed (a's buffer range is not marked in).
func (c *Core) decodePush(a *arrival, p *peer, m *wire.Push) (part []float32, j int, err error) {
	j = m.Part
	if j < 0 || j >= c.bar.parts() {
		return nil, 0, fmt.Errorf("%w: %q pushed part %d, the session has %d", ErrBadPart, p.id, j, c.bar.parts())
	}
	if c.bar.zero[j] {
		return nil, 0, fmt.Errorf("%w: %q pushed part %d, which lies in frozen layers (Session.ZeroParts: implicitly zero)", ErrBadPart, p.id, j)
	}
	lo, hi := c.bar.bounds[j], c.bar.bounds[j+1]
	if c.codec.Format() == compress.FormatFloat32 {
		if len(m.Enc) > 0 {
			return nil, 0, fmt.Errorf("%w: %q sent an encoded payload, the session does not compress", ErrBadPayload, p.id)
		}
		if err := m.Gradient.CheckLen(fmt.Sprintf("gradient part %d", j), hi-lo); err != nil {
			return nil, 0, fmt.Errorf("%w: %q: %w", ErrBadLength, p.id, err)
		}
		if i := avg.FirstNonFinite(m.Gradient); i >= 0 {
			return nil, 0, fmt.Errorf("%w: %q: gradient part %d: value %d is %v", ErrNonFinite, p.id, j, i, m.Gradient[i])
		}
		return m.Gradient, j, nil
	}
	if len(m.Gradient) > 0 {
		return nil, 0, fmt.Errorf("%w: %q sent raw floats, the session compresses with %s", ErrBadPayload, p.id, c.codec)
	}
	if len(a.buf) != c.model.params {
		a.buf = make([]float32, c.model.params)
	}
	part = a.buf[lo:hi]
	switch err := compress.Decode(part, m.Enc, c.codec.Format()); {
	case err == nil:
		return part, j, nil
	case errors.Is(err, compress.ErrLength):
		return nil, 0, fmt.Errorf("%w: %q, part %d: %w", ErrBadLength, p.id, j, err)
	case errors.Is(err, compress.ErrNonFinite):
		return nil, 0, fmt.Errorf("%w: %q, part %d: %w", ErrNonFinite, p.id, j, err)
	default:
		return nil, 0, fmt.Errorf("%w: %q, part %d: %w", ErrBadPayload, p.id, j, err)
	}
}

// payloadBytes is the size of a push's or merged part's gradient payload.
func payloadBytes(raw wire.Floats, enc []byte) int64 {
	return 4*int64(len(raw)) + int64(len(enc))
}

// mergePart merges part j, encodes it, writes what the payload decodes to
// into c.applied, marks the part sent and returns its Merged (header,
// part and payload only).
func (c *Core) mergePart(j int, partial bool) *wire.Merged {
	lo, hi := c.bar.bounds[j], c.bar.bounds[j+1]
	dst := c.merged[lo:hi]
	c.bar.mergePart(dst, c.acc, j)
	m := &wire.Merged{Header: wire.Header{Iteration: c.iter}, Part: j, Partial: partial}
	switch c.codec.Format() {
	case compress.FormatFloat32:
		m.Gradient = slices.Clone(dst)
	case compress.FormatSparse:
		m.Enc = compress.AppendSparse(nil, dst)
	default:
		m.Enc = c.codec.Append(nil, dst)
	}
	if m.Enc == nil {
		copy(c.applied[lo:hi], dst)
	} else if err := compress.Decode(c.applied[lo:hi], m.Enc, c.codec.Format()); err != nil {
		// The mean of finite values is finite and every codec saturates
		// rather than overflow: this is a bug of ours, not a peer's.
		panic(fmt.Sprintf("hub: the merged part %d does not decode: %v", j, err))
	}
	c.bar.sent[j] = true
	return m
}

// sendParts sends ahead, last layer first, every part that every member
// has pushed and that has not gone out yet. The iteration must be open and
// its barrier not complete (close sends what is left).
func (c *Core) sendParts() {
	if c.bar.live < 2 {
		return
	}
	for j := c.bar.parts() - 1; j >= 0; j-- {
		if c.bar.zero[j] || c.bar.sent[j] || !c.bar.partComplete(j) {
			continue
		}
		m := c.mergePart(j, true)
		c.partials = append(c.partials, m)
		for _, id := range c.order {
			c.sendMerged(id, m)
		}
	}
}

// sendMerged sends a Merged (partial or final) and counts its payload.
func (c *Core) sendMerged(id string, m *wire.Merged) {
	c.bytesDown += payloadBytes(m.Gradient, m.Enc)
	c.send(id, m)
}

// resendParts sends id the parts of the open iteration that went out
// ahead: it has just been given the state of the iteration (a Welcome or
// ResyncAnswer) and would otherwise miss them.
func (c *Core) resendParts(id string) {
	for _, m := range c.partials {
		c.sendMerged(id, m)
	}
}
