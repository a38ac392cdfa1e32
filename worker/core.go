package worker

import (
	"fmt"
	"math"
	"slices"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

type phase uint8

const (
	phaseJoining   phase = iota // Register sent; waiting for Welcome
	phaseComputing              // a ComputeRequest is out; waiting for Computed
	phasePushed                 // Push sent for iter; waiting for Merged iter
	phaseIdle                   // holds the state at iter, not in its barrier; waiting for Merged iter
	phaseResyncing              // ResyncRequest sent; waiting for ResyncAnswer
	phaseDone                   // Goodbye or Reject received
)

// hubLR is the worker trainer's schedule: the learning rate of the step is
// the one the hub sends in Merged, so a worker never computes its own and
// cannot disagree with the hub about it (a float32 schedule evaluated on
// two architectures could round differently).
type hubLR struct{ lr float32 }

// LR implements solver.Schedule.
func (h *hubLR) LR(int) float32 { return h.lr }

// Core is a worker's protocol state machine. It is not safe for concurrent
// use: the driver calls Step, Computed, Ready and Advance from one goroutine
// (it may run the requested compute on another; see Step).
type Core struct {
	cfg Config
	b   gpu.Backend

	phase   phase
	id      string // the id the hub gave; cfg.Name before
	iter    uint64 // the iteration of the state the net holds
	batch   int    // batch of the compute in flight
	pending bool   // a compute is out: the net belongs to the driver
	held    []wire.Message

	model   string
	mcfg    []byte
	session wire.Session
	tr      *solver.Trainer
	lr      hubLR
	parts   parts // codec, error feedback, layer-wise parts (parts.go)

	mismatches int
	// battery is the latest reading (SetBattery), sent with every push;
	// told is the last one a Status or the Register carried.
	battery, told wire.Battery
	final         *wire.Goodbye
	err           error

	ready Ready
}

// NewCore returns a worker core whose first Ready holds its Register. b is
// the backend the model is built on when the Welcome arrives.
func NewCore(cfg Config, b gpu.Backend) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("%w: nil backend", ErrConfig)
	}
	c := &Core{cfg: cfg, b: b, id: cfg.Name, battery: cfg.Battery, told: cfg.Battery}
	c.send(&wire.Register{Device: cfg.Device, Backend: cfg.Backend, Speed: cfg.Speed,
		Shard: cfg.Shard, Info: cfg.Info, Classes: cfg.Classes, Battery: cfg.Battery})
	return c, nil
}

// Ready returns what the driver must do now. It does not clear it: call
// Advance once it is handled.
func (c *Core) Ready() Ready { return c.ready }

// Advance acknowledges the last Ready. Done stays set; a compute handed out
// stays outstanding until Computed.
func (c *Core) Advance() {
	c.ready.Messages, c.ready.Events, c.ready.Compute = nil, nil, nil
}

// ID returns the id the hub gave this worker (its Name before the Welcome).
func (c *Core) ID() string { return c.id }

// Iteration returns the iteration of the state the network holds: the
// number of optimizer steps it has taken.
func (c *Core) Iteration() uint64 { return c.iter }

// Session returns the session the hub's Welcome described (global batch,
// iterations, codec, …); the zero Session before the Welcome.
func (c *Core) Session() wire.Session { return c.session }

// Trainer returns the worker's trainer, nil before the Welcome. The driver
// calls its Gradient for a ComputeRequest and otherwise only reads it.
func (c *Core) Trainer() *solver.Trainer { return c.tr }

// Model returns the model name, config and defining meta (an imported
// model's graph, class names, input normalisation: models.DefiningMeta) of
// the hub's Welcome (zero before it).
func (c *Core) Model() (string, models.Config, [][2]string) {
	if c.mcfg == nil {
		return c.model, models.Config{}, nil
	}
	cfg, meta, _ := state.DecodeModel(c.mcfg) // decoded once already when the model was built
	return c.model, cfg, meta
}

// SetBattery records the driver's latest battery reading: every later
// push carries it. When the hub takes Status messages (its Welcome's
// Session.Status) and the reading differs from the last one the hub was
// told in its status or whole percentage, the next Ready holds a Status:
// a parked worker pushes nothing, and this is how the hub learns it is
// charging again. Before the Welcome and after the end it only records.
func (c *Core) SetBattery(b wire.Battery) {
	c.battery = b
	if c.phase == phaseJoining || c.phase == phaseDone || !c.session.Status {
		return
	}
	if b.Status == c.told.Status && math.Floor(float64(b.Percent)) == math.Floor(float64(c.told.Percent)) {
		return
	}
	c.told = b
	c.send(&wire.Status{Header: wire.Header{Iteration: c.iter}, Battery: b})
}

// Battery returns the latest battery reading (the zero Battery: unknown).
func (c *Core) Battery() wire.Battery { return c.battery }

// Mismatches returns how many times the weights' hash after a step differed
// from the hub's.
func (c *Core) Mismatches() int { return c.mismatches }

// Final returns the final weights and batch-norm state the hub sent with
// its Goodbye, or nil before it.
func (c *Core) Final() (weights, st []float32) {
	if c.final == nil {
		return nil, nil
	}
	return c.final.FinalWeights, c.final.FinalState
}

// FinalIteration returns the iteration the Goodbye's final weights belong
// to: the hub's count of merged iterations when it ended the run. It can be
// ahead of Iteration() (a worker whose last compute the hub did not wait
// for never applied the last Merged; the final weights include it). Before
// the Goodbye, or for one without weights, it is Iteration().
func (c *Core) FinalIteration() uint64 {
	if c.final == nil || c.final.FinalWeights == nil || c.final.Iteration < c.iter {
		return c.iter
	}
	return c.final.Iteration
}

// Err returns why the hub refused this worker (a Reject), or nil.
func (c *Core) Err() error { return c.err }

func (c *Core) send(m wire.Message) {
	m.Head().Sender = c.id
	c.ready.Messages = append(c.ready.Messages, m)
}

func (c *Core) event(e Event) { c.ready.Events = append(c.ready.Events, e) }

// Step handles message m from peer from (the id the transport
// authenticated). It does not keep m's vectors past the call, except a
// Goodbye's final weights and a message held as described below.
//
// While a compute is out the network belongs to the driver, so messages
// that would change it (Welcome, Merged, ResyncAnswer) are held, unchecked,
// and handled in order by Computed; Step then returns nil for them. Errors
// found when a held message is handled become EventRefused events. A
// refused input returns an error wrapping one of the package's sentinels.
func (c *Core) Step(from string, m wire.Message) error {
	if c.phase == phaseDone {
		return fmt.Errorf("%w: %s from %q", ErrDone, m.Kind(), from)
	}
	if from != c.cfg.Hub {
		return c.refuse(fmt.Errorf("%w: %s from %q", ErrUnknownPeer, m.Kind(), from))
	}
	switch m.(type) {
	case *wire.Welcome, *wire.Merged, *wire.ResyncAnswer:
		if c.pending {
			c.held = append(c.held, m)
			return nil
		}
	}
	return c.refuse(c.step(m))
}

func (c *Core) refuse(err error) error {
	if err != nil {
		c.event(Event{Kind: EventRefused, Iteration: c.iter, Err: err})
	}
	return err
}

func (c *Core) step(m wire.Message) error {
	switch m := m.(type) {
	case *wire.Welcome:
		return c.welcome(m)
	case *wire.Merged:
		return c.merged(m)
	case *wire.ResyncAnswer:
		if c.phase == phaseJoining {
			return fmt.Errorf("%w: resync answer before the Welcome", ErrUnexpected)
		}
		if err := c.load(m.ModelState, m.Iteration); err != nil {
			c.askResync("the resync answer was refused")
			return err
		}
		c.phase = phaseIdle
		c.event(Event{Kind: EventResynced, Iteration: c.iter})
		return nil
	case *wire.Goodbye:
		c.final = m
		c.end("goodbye: " + m.Reason)
		return nil
	case *wire.Reject:
		c.err = fmt.Errorf("worker: the hub refused: %s: %s", m.Code, m.Message)
		c.end(c.err.Error())
		return nil
	}
	return fmt.Errorf("%w: %s from the hub", ErrUnexpected, m.Kind())
}

// Leave ends the session from the worker's side (the user stopped it):
// the next Ready holds a Goodbye for the hub, which then forgets this
// worker at once instead of waiting for its deadline, and Done. A compute
// out is abandoned: Computed then returns ErrDone. After the end it does
// nothing.
func (c *Core) Leave(reason string) {
	if c.phase == phaseDone {
		return
	}
	c.send(&wire.Goodbye{Header: wire.Header{Iteration: c.iter}, Reason: reason})
	c.end("left: " + reason)
}

func (c *Core) end(why string) {
	c.phase = phaseDone
	c.ready.Done = true
	c.held = nil
	c.event(Event{Kind: EventDone, Iteration: c.iter, Text: why})
}

// welcome builds the model on the first Welcome, loads the state, and
// starts computing when the Welcome carries a batch.
func (c *Core) welcome(m *wire.Welcome) error {
	if m.WorkerID == "" || m.BatchSize < 0 {
		return fmt.Errorf("%w: Welcome with id %q and batch %d", ErrBadMessage, m.WorkerID, m.BatchSize)
	}
	if c.tr == nil {
		if err := c.build(m); err != nil {
			c.send(&wire.Reject{Code: wire.CodeModel, Message: err.Error()})
			c.err = err
			c.end("cannot build the model")
			return err
		}
	} else if m.Model != c.model || !slices.Equal(m.ModelConfig, c.mcfg) {
		return fmt.Errorf("%w: Welcome for %s, this worker runs %s", ErrModel, m.Model, c.model)
	}
	if err := c.checkBatch(m.BatchSize); err != nil {
		return fmt.Errorf("%w: Welcome: %w", ErrBadMessage, err)
	}
	if err := c.parts.setup(m.Session, c.tr.Net); err != nil {
		c.send(&wire.Reject{Code: wire.CodeModel, Message: err.Error()})
		c.err = err
		c.end("cannot use the session's gradient encoding")
		return err
	}
	if err := c.load(m.ModelState, m.Iteration); err != nil {
		return err
	}
	c.id, c.session = m.WorkerID, m.Session
	c.event(Event{Kind: EventWelcomed, Iteration: c.iter, Text: c.id})
	c.next(m.BatchSize)
	return nil
}

func (c *Core) build(m *wire.Welcome) error {
	mc, meta, err := state.DecodeModel(m.ModelConfig)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrModel, err)
	}
	// The description is checked as a local file is: every size through
	// internal/limits (File.Plan), and the layout against the weights that
	// came with it, before the net is allocated. A hub cannot make this
	// worker allocate more than it sent, nor index with a size that
	// overflowed.
	f := &models.File{Model: m.Model, Config: mc, Meta: meta}
	lay, err := f.Plan()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrModel, err)
	}
	if len(m.ModelState.Weights) != lay.NumParams || len(m.ModelState.State) != lay.NumState {
		return fmt.Errorf("%w: the Welcome carries %d weights and %d state values, the model it describes has %d and %d",
			ErrModel, len(m.ModelState.Weights), len(m.ModelState.State), lay.NumParams, lay.NumState)
	}
	net, err := f.Net(c.b)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrModel, err)
	}
	opt, err := state.NewOptimizer(c.b, m.Optimizer.Name, net.NumParams(), m.Session)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrModel, err)
	}
	if err := net.Freeze(m.Session.Frozen...); err != nil {
		return fmt.Errorf("%w: the session's frozen layers: %w", ErrModel, err)
	}
	c.tr = solver.NewTrainer(net, opt, &c.lr)
	c.model, c.mcfg = m.Model, slices.Clone(m.ModelConfig)
	return nil
}

// checkBatch refuses a batch size from the hub whose buffers would exceed
// limits.MaxElements: b times the largest tensor of a sample (the input or
// a layer's output) must stay within it, so that the driver's and the
// net's per-batch buffers are sized by products that cannot overflow (a
// hostile hub's batch of 2^40 made the driver's input buffer panic).
func (c *Core) checkBatch(b int) error {
	largest := c.tr.Net.In.Size()
	for _, l := range c.tr.Net.Layers() {
		largest = max(largest, l.Out.Size())
	}
	if _, err := limits.Product("batch × the largest tensor of a sample", b, largest); err != nil {
		return fmt.Errorf("batch %d: %w", b, err)
	}
	return nil
}

// load writes a state at iteration it into the net; on error nothing
// changed.
func (c *Core) load(s wire.ModelState, it uint64) error {
	if it > math.MaxInt32 {
		return fmt.Errorf("%w: iteration %d", ErrBadMessage, it)
	}
	if err := state.Load(c.tr.Net, c.tr.Opt, s); err != nil {
		return fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	c.iter, c.tr.Iter = it, int(it)
	c.parts.resetState()
	return nil
}

// next starts computing iteration c.iter with batch b, or waits for its
// Merged when b is 0.
func (c *Core) next(b int) {
	if b <= 0 {
		c.phase = phaseIdle
		return
	}
	c.phase, c.pending, c.batch = phaseComputing, true, b
	clear(c.parts.pushed)
	c.parts.sentBN = false
	c.parts.snapshot(c.tr.Net)
	c.ready.Compute = &ComputeRequest{Iteration: c.iter, Batch: b, Parts: c.parts.bounds[:c.parts.count()]}
}

func (c *Core) askResync(why string) {
	c.phase = phaseResyncing
	c.event(Event{Kind: EventResync, Iteration: c.iter, Text: why})
	c.send(&wire.ResyncRequest{Header: wire.Header{Iteration: c.iter}, Reason: why})
}

// merged applies the hub's step for c.iter and checks the result's hash.
func (c *Core) merged(m *wire.Merged) error {
	switch c.phase {
	case phaseJoining:
		return fmt.Errorf("%w: Merged before the Welcome", ErrUnexpected)
	case phaseResyncing:
		// The answer on its way replaces whatever this would do.
		c.event(Event{Kind: EventDiscarded, Iteration: m.Iteration, Text: "Merged while resyncing"})
		return nil
	}
	switch {
	case m.Iteration < c.iter:
		// Our state is already past it (a resync overtook it): nothing to do.
		return fmt.Errorf("%w: Merged %d, the worker is at %d", ErrStale, m.Iteration, c.iter)
	case m.Iteration > c.iter:
		c.askResync(fmt.Sprintf("missed Merged %d..%d", c.iter, m.Iteration-1))
		return fmt.Errorf("%w: Merged %d, the worker is at %d", ErrFuture, m.Iteration, c.iter)
	}
	err := c.mergedPart(m)
	if err == nil && m.Partial {
		return nil // a part sent ahead: the step waits for the final Merged
	}
	if err == nil {
		for j, ok := range c.parts.got {
			if !ok && !c.parts.zero[j] {
				err = fmt.Errorf("the final Merged came without part %d of the update", j)
				break
			}
		}
	}
	if err == nil && (math.IsNaN(float64(m.LR)) || math.IsInf(float64(m.LR), 0)) {
		err = fmt.Errorf("learning rate %v", m.LR)
	}
	if err == nil {
		err = c.checkBatch(m.BatchSizes[c.id])
	}
	if err == nil && len(m.State) > 0 {
		if err = m.State.CheckLen("merged batch-norm state", c.tr.Net.State.Len()); err == nil {
			err = state.CheckFinite("merged batch-norm state", m.State)
		}
	}
	if err != nil {
		c.askResync("malformed Merged")
		return fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	c.tr.Net.B.Upload(c.tr.Net.Grads, c.parts.merged)
	clear(c.parts.got)
	c.lr.lr = m.LR
	c.tr.Apply()
	if len(m.State) > 0 {
		c.tr.Net.SetState(m.State) // the frozen prefix's statistics come back the same: no refold
	}
	c.iter = uint64(c.tr.Iter)
	c.event(Event{Kind: EventMerged, Iteration: m.Iteration})
	if !m.WeightsHash.IsZero() && state.NetHash(c.tr.Net) != m.WeightsHash {
		c.mismatches++
		c.event(Event{Kind: EventMismatch, Iteration: c.iter,
			Text: fmt.Sprintf("weights differ from the hub's after iteration %d", m.Iteration)})
		c.askResync("weights hash mismatch")
		return nil
	}
	c.next(m.BatchSizes[c.id])
	return nil
}

// Computed reports that the driver finished the ComputeRequest: the
// gradient is in the trainer's Net.Grads. The core pushes it, unless a
// message held meanwhile makes it useless (the hub closed the iteration
// without it or sent a new state), and then handles the held messages.
func (c *Core) Computed(d ComputeDone) error {
	if c.phase == phaseDone {
		return fmt.Errorf("%w: compute done after the end", ErrDone)
	}
	if !c.pending {
		return c.refuse(fmt.Errorf("%w: compute done with no compute out", ErrUnexpected))
	}
	if d.Iteration != c.iter || d.Samples < 1 || d.Samples > c.batch || d.ComputeNanos < 0 {
		return c.refuse(fmt.Errorf("%w: done %+v for iteration %d, batch %d", ErrBadCompute, d, c.iter, c.batch))
	}
	c.pending = false
	c.phase = phaseIdle
	// The parts PartDone did not push go now, last layer first (zero
	// parts, in frozen layers, never go); all are
	// checked before any goes, so that a non-finite one sends nothing more
	// (and leaves the error feedback's residual untouched).
	finite := true
	p := &c.parts
	for j := range p.count() {
		if p.pushed[j] || p.zero[j] {
			continue
		}
		lo, hi := p.bounds[j], p.bounds[j+1]
		if g := p.grad[lo:hi]; lo == 0 && hi == len(p.grad) {
			c.tr.Net.B.Download(g, c.tr.Net.Grads)
		} else {
			c.tr.Net.B.Download(g, c.tr.Net.B.View(c.tr.Net.Grads, lo, hi-lo))
		}
		if state.CheckFinite("gradient", p.grad[lo:hi]) != nil {
			finite = false
		}
	}
	switch {
	case c.superseded():
		c.event(Event{Kind: EventDiscarded, Iteration: d.Iteration, Text: "the hub moved on during the compute"})
	case math.IsNaN(d.Loss) || math.IsInf(d.Loss, 0) || !finite:
		// The hub would refuse it; it will mark us late and resync us.
		c.event(Event{Kind: EventDiscarded, Iteration: d.Iteration, Text: "non-finite loss or gradient"})
	default:
		for j := p.count() - 1; j >= 0; j-- {
			if !p.pushed[j] && !p.zero[j] {
				p.pushed[j] = true
				c.pushValues(j, d.Iteration, d.Samples, d.Loss, d.ComputeNanos, p.grad[p.bounds[j]:p.bounds[j+1]], nil)
			}
		}
		c.phase = phasePushed
		c.event(Event{Kind: EventPushed, Iteration: d.Iteration, Loss: d.Loss})
	}
	held := c.held
	c.held = nil
	for i, m := range held {
		if c.pending || c.phase == phaseDone {
			// A held message started another compute (or ended the
			// session): hold the rest again behind it.
			if c.phase != phaseDone {
				c.held = append(c.held, held[i:]...)
			}
			break
		}
		c.refuse(c.step(m))
	}
	return nil
}

// superseded reports whether a held message makes the compute in flight
// useless: a new state (Welcome, ResyncAnswer) or the Merged of its own
// iteration, which the hub closed without this worker.
func (c *Core) superseded() bool {
	for _, m := range c.held {
		switch m := m.(type) {
		case *wire.Welcome, *wire.ResyncAnswer:
			return true
		case *wire.Merged:
			// A part sent ahead is the hub waiting for the rest of ours.
			if m.Iteration >= c.iter && !m.Partial {
				return true
			}
		}
	}
	return false
}
