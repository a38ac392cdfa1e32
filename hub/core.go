package hub

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/wire"
)

// modelInfo is what the core knows of the master model, which the driver
// owns (master.go builds it from a Model): how a worker builds it, the
// shape of its gradient, and how to read its state. The core never writes
// the model: it asks for each optimizer step with an ApplyRequest.
type modelInfo struct {
	name   string // Model.Name
	config []byte // the model description a Welcome carries (state.EncodeModel)
	// labels are the model's class names, which a worker must register
	// with; nil: workers' classes are not checked. classDiff says for a
	// person how a worker's list differs from them.
	labels    []string
	classDiff func(worker []string) string
	iter      uint64 // the iteration the master starts at (Trainer.Iter)
	params    int    // the flat gradient's length
	stateLen  int    // the batch-norm state's length
	// session holds what the model and its trainer fix in the session:
	// the optimizer and schedule (state.Describe), the frozen layers, the
	// parts and zero parts (SessionParts) and the workers' momentum or
	// Adam correction, checked against the optimizer.
	session wire.Session
	starts  []int // the parts' offsets (SessionParts)
	zero    []int // the parts that lie wholly in frozen layers
	master  Snapshotter
}

// Snapshotter is the core's read of the master model (the way etcd-io/raft
// reads its Storage): the driver owns the model, writes it only by running
// the core's ApplyRequests, and answers this read between inputs.
type Snapshotter interface {
	// Snapshot returns a copy of the master's weights and batch-norm state
	// now, with its optimizer's state when opt is set (a Welcome's and a
	// ResyncAnswer's state; a Goodbye carries none).
	Snapshot(opt bool) wire.ModelState
}

type phase uint8

const (
	phaseWaiting phase = iota // fewer than MinWorkers have registered; nothing open yet
	phaseOpen                 // iteration c.iter is open
	phaseParked               // started, but no worker is left; nothing open
	phaseDone                 // the Goodbyes are out
)

type role uint8

const (
	roleWaiting role = iota // registered before the start; no Welcome yet
	roleIdle                // holds the state at c.iter; not in its barrier; gets its Merged
	roleMember              // in the barrier of c.iter
)

// peer is what the hub knows of one live worker.
type peer struct {
	id        string
	speed     float64 // Register.Speed, samples/s: the first guess
	role      role
	misses    int     // deadlines missed in a row
	perSample float64 // smoothed nanoseconds per sample (adaptive policy)
	measured  bool
	// The measured deadline's figures (deadline.go): smoothed and newest
	// ticks from an iteration's opening to its whole push, and the batch
	// of the newest.
	iterTicks, lastTicks float64
	timedBatch           int
	timed                bool
	park                 parking      // communication figures and parking state (park.go)
	battery              wire.Battery // the latest the worker reported (battery.go)
	low                  bool         // parked for its battery (Config.BatteryFloor)
	computeW, radioW     float64      // declared draws (Register.Info; energy.go)
}

// Core is the hub's protocol state machine. It is not safe for concurrent
// use: the driver calls Step, Tick, Leave, Stop, Ready and Advance from one
// goroutine.
type Core struct {
	cfg     Config
	model   modelInfo
	session wire.Session

	phase phase
	iter  uint64 // the iteration open (or to open): the master's Trainer.Iter
	peers map[string]*peer
	order []string // live peer ids, sorted: every walk over peers uses it
	bar   barrier
	acc   []float64

	codec     compress.Codec // the session's gradient codec (parts.go)
	merged    []float32      // the merged parts, before encoding
	applied   []float32      // what the merged payloads decode to: the step's gradient
	partials  []*wire.Merged // parts of the open iteration sent ahead
	bytesDown int64          // merged payload bytes sent for the open iteration

	// closing is the iteration whose ApplyRequest is out, until Applied;
	// held is a reconnect's Register whose old session's leaving closed
	// it (register.go): it is handled after the step.
	closing *closing
	held    *heldRegister

	ready Ready
}

// newCore returns a hub core that waits for cfg.MinWorkers registrations,
// for the master model m describes (NewCore, master.go, builds m).
func newCore(cfg Config, m modelInfo) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Core{
		cfg: cfg, model: m,
		session: m.session,
		iter:    m.iter,
		peers:   map[string]*peer{},
		acc:     make([]float64, mergeBlock),
	}
	c.session.GlobalBatch = cfg.GlobalBatch
	c.session.Iterations = cfg.Iterations
	c.session.DeadlineMillis = int64(cfg.DeadlineTicks) * cfg.Tick.Milliseconds()
	c.session.Status = true // the core takes Status (battery.go)
	if err := c.setupParts(); err != nil {
		return nil, err
	}
	if cfg.Iterations > 0 && c.iter >= cfg.Iterations {
		return nil, fmt.Errorf("%w: trainer at iteration %d, the run ends at %d", ErrConfig, c.iter, cfg.Iterations)
	}
	return c, nil
}

// Ready returns what the driver must do now: run Apply (and report it with
// Applied) first, then send Messages and log Events. It does not clear the
// messages and events: call Advance once they are handled.
func (c *Core) Ready() Ready { return c.ready }

// Advance acknowledges the last Ready: its messages and events are dropped
// from the core's queues. Done stays set.
func (c *Core) Advance() {
	c.ready.Messages, c.ready.Events = nil, nil
}

// Iteration returns the iteration open or next to open: the number of
// optimizer steps the master net has taken.
func (c *Core) Iteration() uint64 { return c.iter }

// Workers returns the ids of the live workers, sorted.
func (c *Core) Workers() []string { return slices.Clone(c.order) }

func (c *Core) send(to string, m wire.Message) {
	h := m.Head()
	h.Sender = c.cfg.ID
	c.ready.Messages = append(c.ready.Messages, Envelope{To: to, Msg: m})
}

func (c *Core) event(e Event) { c.ready.Events = append(c.ready.Events, e) }

// Step handles message m from peer from (the id the transport
// authenticated; the message's own Header.Sender is not trusted). It keeps
// one thing of m: an accepted Push's Gradient (of a session without
// compression), read without a copy until the iteration closes or reopens,
// so the caller must not modify it meanwhile. Transports hand the receiver
// a message of its own (a fresh decode, or the simulator's copy), so the
// hub's driver has nothing to do; copying 64 lenet-caffe gradients was a
// third of the hub's time per iteration (BenchmarkMerge64). A refused input
// returns an error wrapping one of the package's sentinels, is logged as
// EventRefused, and changes nothing but that.
func (c *Core) Step(from string, m wire.Message) error {
	c.mustNotApply("Step")
	err := c.step(from, m)
	if err != nil {
		c.event(Event{Kind: EventRefused, Peer: from, Iteration: c.iter, Err: err})
	}
	return err
}

func (c *Core) step(from string, m wire.Message) error {
	if _, ok := m.(*wire.Register); ok && c.cfg.Allow != nil && !c.cfg.Allow[from] {
		// Before anything else: even after the run, a Goodbye would hand a
		// stranger the final weights.
		c.send(from, &wire.Reject{Code: wire.CodeAuth,
			Message: fmt.Sprintf("peer id %s is not on this hub's allowlist", from)})
		return fmt.Errorf("%w: %q", ErrNotAllowed, from)
	}
	if c.phase == phaseDone {
		if _, ok := m.(*wire.Register); ok {
			c.goodbye(from, "the run is over")
		}
		return fmt.Errorf("%w: %s from %q", ErrDone, m.Kind(), from)
	}
	if r, ok := m.(*wire.Register); ok {
		return c.register(from, r)
	}
	p := c.peers[from]
	if p == nil {
		return fmt.Errorf("%w: %s from %q", ErrUnknownPeer, m.Kind(), from)
	}
	switch m := m.(type) {
	case *wire.Push:
		return c.push(p, m)
	case *wire.ResyncRequest:
		if c.phase != phaseOpen {
			return fmt.Errorf("%w: resync request from %q before the run started", ErrUnexpected, from)
		}
		c.sendResync(p.id, c.model.master.Snapshot(true), "asked: "+m.Reason)
		c.resendParts(p.id)
		if p.role == roleMember {
			if !c.bar.done(c.bar.pushes[p.id]) {
				// Its weights were wrong: whatever it computes for this
				// iteration is not wanted (what it pushed already counts).
				// It takes part from the next.
				delete(c.bar.members, p.id)
				p.role = roleIdle
			}
		}
		c.check()
		return nil
	case *wire.Status:
		c.status(p, m)
		return nil
	case *wire.Goodbye:
		c.remove(p, "goodbye: "+m.Reason)
		c.check()
		return nil
	case *wire.Reject:
		c.remove(p, fmt.Sprintf("rejected the run: %s: %s", m.Code, m.Message))
		c.check()
		return nil
	}
	return fmt.Errorf("%w: %s from worker %q", ErrUnexpected, m.Kind(), from)
}

// Tick counts one unit of time. When the open iteration reaches
// DeadlineTicks, the members that have not pushed are marked late, and the
// iteration closes with what arrived (or reopens, if nothing did).
func (c *Core) Tick() {
	c.mustNotApply("Tick")
	if c.phase != phaseOpen || c.cfg.DeadlineTicks == 0 {
		return
	}
	c.bar.ticks++
	if c.bar.ticks < c.bar.deadline {
		return
	}
	var late []string
	for _, id := range c.bar.missing() {
		p := c.peers[id]
		delete(c.bar.members, id)
		p.role = roleIdle
		p.misses++
		c.event(Event{Kind: EventLate, Peer: id, Iteration: c.iter,
			Text: fmt.Sprintf("no whole push within the deadline of %d ticks", c.bar.deadline)})
		if c.cfg.MaxMisses > 0 && p.misses >= c.cfg.MaxMisses {
			c.event(Event{Kind: EventDropped, Peer: id, Iteration: c.iter,
				Text: fmt.Sprintf("missed %d deadlines in a row", p.misses)})
			c.goodbye(id, fmt.Sprintf("missed %d deadlines in a row", p.misses))
			c.remove(p, "dropped")
			continue
		}
		late = append(late, id)
	}
	if len(c.bar.pushes) == 0 {
		c.event(Event{Kind: EventRetry, Iteration: c.iter, Text: "no push by the deadline"})
		c.reopen()
		return
	}
	c.close(late)
}

// Leave tells the core that the driver lost peer id (its connection
// dropped). Unknown ids are ignored. A push it made for the open iteration
// still counts.
func (c *Core) Leave(id string) {
	c.mustNotApply("Leave")
	if p := c.peers[id]; p != nil && c.phase != phaseDone {
		c.remove(p, "connection lost")
		c.check()
	}
}

// Stop ends the run now (the driver's own stopping rule fired, or the user
// asked): every worker gets Goodbye with the current weights, and pushes of
// the open iteration are discarded.
func (c *Core) Stop(reason string) {
	c.mustNotApply("Stop")
	if c.phase != phaseDone {
		c.finish(reason)
	}
}

func (c *Core) remove(p *peer, why string) {
	delete(c.peers, p.id)
	if i, ok := slices.BinarySearch(c.order, p.id); ok {
		c.order = slices.Delete(c.order, i, i+1)
	}
	delete(c.bar.members, p.id)
	c.event(Event{Kind: EventLeft, Peer: p.id, Iteration: c.iter, Text: why})
}
