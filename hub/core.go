package hub

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// Model is the hub's master copy of the network and how to describe it to
// workers.
type Model struct {
	// Name and Config name the architecture (models.Build); workers build
	// the same network from them. Name may be models.GraphModel: Meta then
	// holds the layers.
	Name   string
	Config models.Config
	// Meta holds the entries that define the model beyond Name and Config
	// (models.DefiningMeta): an imported model's graph, its class names and
	// input normalisation. The Welcome carries them. When they name the
	// classes, a worker must register with the same list (wire.Register
	// Classes): one whose list differs is refused with a Reject
	// wire.CodeClasses that names the missing and extra classes.
	Meta [][2]string
	// Trainer holds the master network with its weights initialised or
	// loaded, its optimizer (Opt) and schedule (Sched). Trainer.Iter is the
	// iteration the run starts (or resumes) at. The core owns the trainer
	// from NewCore on: the caller may read it (to save a checkpoint) only
	// between Advance and the next input.
	Trainer *solver.Trainer
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
	park      parking // communication figures and parking state (park.go)
}

// Core is the hub's protocol state machine. It is not safe for concurrent
// use: the driver calls Step, Tick, Leave, Stop, Ready and Advance from one
// goroutine.
type Core struct {
	cfg     Config
	model   Model
	tr      *solver.Trainer
	session wire.Session
	mcfg    []byte
	labels  []string // the model's class names; nil: workers' classes are not checked

	phase phase
	iter  uint64 // the iteration open (or to open): always uint64(tr.Iter)
	peers map[string]*peer
	order []string // live peer ids, sorted: every walk over peers uses it
	bar   barrier
	acc   []float64

	codec     compress.Codec // the session's gradient codec (parts.go)
	merged    []float32      // the merged parts, before encoding
	applied   []float32      // what the merged payloads decode to: the step's gradient
	partials  []*wire.Merged // parts of the open iteration sent ahead
	bytesDown int64          // merged payload bytes sent for the open iteration

	ready Ready
}

// NewCore returns a hub core that waits for cfg.MinWorkers registrations.
func NewCore(cfg Config, m Model) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tr := m.Trainer
	if tr == nil || tr.Net == nil || tr.Opt == nil || tr.Sched == nil {
		return nil, fmt.Errorf("%w: the model needs a trainer with a net, an optimizer and a schedule", ErrConfig)
	}
	if tr.Iter < 0 {
		return nil, fmt.Errorf("%w: trainer at iteration %d", ErrConfig, tr.Iter)
	}
	if _, err := models.Lookup(m.Name); err != nil && m.Name != models.GraphModel {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	mcfg, err := state.EncodeModel(m.Config, m.Meta)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var labels []string
	if models.MetaValue(m.Meta, models.MetaLabels) != "" {
		if labels, _, err = models.Labels(m.Meta, tr.Net.Out.Size()); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	c := &Core{
		cfg: cfg, model: m, tr: tr, labels: labels,
		mcfg:  mcfg,
		iter:  uint64(tr.Iter),
		peers: map[string]*peer{},
		acc:   make([]float64, mergeBlock),
	}
	c.session = wire.Session{
		GlobalBatch:    cfg.GlobalBatch,
		Iterations:     cfg.Iterations,
		DeadlineMillis: int64(cfg.DeadlineTicks) * cfg.Tick.Milliseconds(),
	}
	if err := state.Describe(&c.session, tr.Opt, tr.Sched); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.setupParts(); err != nil {
		return nil, err
	}
	// Workers freeze what the master net has frozen: a node that stepped a
	// layer the others keep fixed would differ from them after one merge.
	for _, l := range tr.Net.Layers() {
		if l.Frozen && l.Params > 0 {
			c.session.Frozen = append(c.session.Frozen, l.Name)
		}
	}
	if cfg.Iterations > 0 && c.iter >= cfg.Iterations {
		return nil, fmt.Errorf("%w: trainer at iteration %d, the run ends at %d", ErrConfig, c.iter, cfg.Iterations)
	}
	return c, nil
}

// Ready returns what the driver must do now: send Messages, log Events.
// It does not clear them: call Advance once they are handled.
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

// Trainer returns the master trainer (read only; see Model.Trainer).
func (c *Core) Trainer() *solver.Trainer { return c.tr }

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
		c.sendResync(p.id, state.Capture(c.tr.Net, c.tr.Opt), "asked: "+m.Reason)
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

func (c *Core) register(from string, m *wire.Register) error {
	if old := c.peers[from]; old != nil {
		// A reconnect: whatever the old session held is lost on its side.
		c.remove(old, "registered again")
		c.check()
		if c.phase == phaseDone {
			c.goodbye(from, "the run is over")
			return nil
		}
	}
	if len(c.order) >= c.cfg.MaxWorkers {
		c.send(from, &wire.Reject{Code: wire.CodeFull,
			Message: fmt.Sprintf("the run has its %d workers", c.cfg.MaxWorkers)})
		return fmt.Errorf("%w: %d workers", ErrFull, c.cfg.MaxWorkers)
	}
	if c.labels != nil && !slices.Equal(m.Classes, c.labels) {
		msg := classDiff(c.labels, m.Classes)
		c.send(from, &wire.Reject{Code: wire.CodeClasses, Message: msg})
		return fmt.Errorf("%w: %q: %s", ErrClasses, from, msg)
	}
	speed := m.Speed
	if math.IsNaN(speed) || math.IsInf(speed, 0) || speed < 0 {
		speed = 0
	}
	p := &peer{id: from, speed: speed}
	c.peers[from] = p
	i, _ := slices.BinarySearch(c.order, from)
	c.order = slices.Insert(c.order, i, from)
	c.event(Event{Kind: EventJoined, Peer: from, Iteration: c.iter, Text: m.Device})
	switch c.phase {
	case phaseWaiting:
		p.role = roleWaiting
		if len(c.order) >= c.cfg.MinWorkers {
			c.event(Event{Kind: EventStarted, Iteration: c.iter, Workers: len(c.order)})
			c.open(c.order, true)
		}
	case phaseParked:
		c.open(c.order, true)
	case phaseOpen:
		// Too late for this iteration's shares: it applies the Merged of
		// this iteration to the state it gets now, then takes part.
		p.role = roleIdle
		c.sendWelcome(p.id, state.Capture(c.tr.Net, c.tr.Opt), 0)
		c.resendParts(p.id)
	}
	return nil
}

// classDiff says, for a person, how a worker's classes differ from the
// model's.
func classDiff(model, worker []string) string {
	if len(worker) == 0 {
		return fmt.Sprintf("the model's classes are %s; this worker sent none (a worker from before class lists?)", strings.Join(model, ", "))
	}
	missing, extra, order := models.LabelDiff(model, worker)
	var parts []string
	if len(extra) > 0 {
		parts = append(parts, "extra classes "+strings.Join(extra, ", ")+" (not in the model)")
	}
	if len(missing) > 0 {
		parts = append(parts, "missing classes "+strings.Join(missing, ", "))
	}
	if order {
		parts = append(parts, "the same classes in another order")
	}
	return "this worker's data has other classes than the model's (" + strings.Join(model, ", ") + "): " + strings.Join(parts, "; ")
}

func (c *Core) push(p *peer, m *wire.Push) error {
	it := m.Iteration
	switch {
	case c.phase != phaseOpen:
		return fmt.Errorf("%w: push from %q while no iteration is open", ErrUnexpected, p.id)
	case it < c.iter:
		return fmt.Errorf("%w: %q pushed for iteration %d, the hub is at %d", ErrStale, p.id, it, c.iter)
	case it > c.iter:
		return fmt.Errorf("%w: %q pushed for iteration %d, the hub is at %d", ErrFuture, p.id, it, c.iter)
	}
	batch, member := c.bar.members[p.id]
	if !member {
		return fmt.Errorf("%w: %q is not in iteration %d", ErrNotMember, p.id, it)
	}
	prev := c.bar.pushes[p.id]
	if c.bar.done(prev) || (prev != nil && m.Part >= 0 && m.Part < len(prev.in) && prev.in[m.Part]) {
		return fmt.Errorf("%w: %q, iteration %d, part %d", ErrDuplicate, p.id, it, m.Part)
	}
	if m.Samples < 1 || m.Samples > batch {
		return fmt.Errorf("%w: %q pushed %d samples, its batch is %d", ErrBadSamples, p.id, m.Samples, batch)
	}
	if prev != nil && m.Samples != prev.samples {
		return fmt.Errorf("%w: %q pushed a part of %d samples, its other parts have %d", ErrBadSamples, p.id, m.Samples, prev.samples)
	}
	if m.ComputeNanos < 0 {
		return fmt.Errorf("%w: %q reports %d ns of compute", ErrBadSamples, p.id, m.ComputeNanos)
	}
	if l := float64(m.Loss); math.IsNaN(l) || math.IsInf(l, 0) {
		return fmt.Errorf("%w: %q reports loss %v", ErrNonFinite, p.id, m.Loss)
	}
	if len(m.State) > 0 {
		if err := m.State.CheckLen("batch-norm state", c.tr.Net.State.Len()); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrBadLength, p.id, err)
		}
		if err := state.CheckFinite("batch-norm state", m.State); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrNonFinite, p.id, err)
		}
	}
	// A float32 part is kept as pushed (no copy); a compressed one is
	// decoded into the arrival's buffer. A refused part leaves nothing
	// marked, and a new arrival goes back unused.
	a, fresh := c.bar.arrival(p.id)
	part, j, err := c.decodePush(a, p, m)
	if err != nil {
		if fresh {
			c.bar.release(a)
		}
		return err
	}
	if fresh {
		c.bar.keep(p.id, a)
	}
	a.part[j], a.in[j] = part, true
	a.count++
	a.samples, a.loss, a.nanos = m.Samples, float64(m.Loss), max(a.nanos, m.ComputeNanos)
	if len(m.State) > 0 {
		a.state = slices.Clone([]float32(m.State))
	}
	c.bar.bytesUp += payloadBytes(m.Gradient, m.Enc)
	p.misses = 0
	if c.bar.done(a) && a.nanos > 0 {
		// The whole backward pass is in: the largest part time is the
		// compute time.
		ps := float64(a.nanos) / float64(a.samples)
		p.perSample = smooth(p.perSample, ps, c.cfg.Smoothing, p.measured)
		p.measured = true
	}
	c.check()
	return nil
}

// Tick counts one unit of time. When the open iteration reaches
// DeadlineTicks, the members that have not pushed are marked late, and the
// iteration closes with what arrived (or reopens, if nothing did).
func (c *Core) Tick() {
	if c.phase != phaseOpen || c.cfg.DeadlineTicks == 0 {
		return
	}
	c.bar.ticks++
	if c.bar.ticks < c.cfg.DeadlineTicks {
		return
	}
	var late []string
	for _, id := range c.bar.missing() {
		p := c.peers[id]
		delete(c.bar.members, id)
		p.role = roleIdle
		p.misses++
		c.event(Event{Kind: EventLate, Peer: id, Iteration: c.iter})
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
	if p := c.peers[id]; p != nil && c.phase != phaseDone {
		c.remove(p, "connection lost")
		c.check()
	}
}

// Stop ends the run now (the driver's own stopping rule fired, or the user
// asked): every worker gets Goodbye with the current weights, and pushes of
// the open iteration are discarded.
func (c *Core) Stop(reason string) {
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

// check closes the open iteration when every member has pushed, and
// reopens or parks it when no member is left and nothing arrived.
func (c *Core) check() {
	if c.phase != phaseOpen {
		return
	}
	if !c.bar.complete() {
		c.sendParts()
		return
	}
	if len(c.bar.pushes) > 0 {
		c.close(nil)
		return
	}
	c.reopen()
}

// reopen opens c.iter again for every live worker, telling each its batch
// with a Welcome (they may have been told nothing, or told they were late),
// or parks the run when no worker is left.
func (c *Core) reopen() {
	if len(c.order) == 0 {
		c.phase = phaseParked
		c.event(Event{Kind: EventParked, Iteration: c.iter})
		return
	}
	c.open(c.order, true)
}

// open opens iteration c.iter with ids (sorted) as its members. With
// welcome set each member gets a Welcome carrying its batch size; otherwise
// the caller has already told them (in a Merged).
func (c *Core) open(ids []string, welcome bool) map[string]int {
	// Parked workers (Config.Park) get no share: they stay idle, apply
	// the Merged of the iteration and are weighed again at the next open.
	shares := c.shares(c.active(ids))
	c.bar.reset(c.iter, shares)
	c.partials, c.bytesDown = nil, 0
	c.phase = phaseOpen
	var st wire.ModelState
	if welcome {
		st = state.Capture(c.tr.Net, c.tr.Opt)
	}
	for _, id := range ids {
		if _, in := shares[id]; in {
			c.peers[id].role = roleMember
		} else {
			c.peers[id].role = roleIdle
		}
		if welcome {
			c.sendWelcome(id, st, shares[id])
		}
	}
	return shares
}

// shares applies the batch policy to ids (sorted).
func (c *Core) shares(ids []string) map[string]int {
	sizes := make([]int, len(ids))
	if c.cfg.Batch == Adaptive {
		tput := make([]float64, len(ids))
		for i, id := range ids {
			p := c.peers[id]
			switch {
			case p.measured && p.perSample > 0:
				tput[i] = 1 / p.perSample
			case p.speed > 0: // samples/s → samples/ns
				tput[i] = p.speed / 1e9
			}
		}
		SplitThroughput(sizes, c.cfg.GlobalBatch, tput)
	} else {
		SplitEqual(sizes, c.cfg.GlobalBatch)
	}
	out := make(map[string]int, len(ids))
	for i, id := range ids {
		out[id] = sizes[i]
	}
	return out
}

// close merges the open iteration, applies the step to the master net and
// tells every worker holding the state of c.iter. late lists the members
// that missed the deadline: they get the full new state instead.
func (c *Core) close(late []string) {
	samples, loss := c.bar.totals()
	workers := len(c.bar.pushes)
	k := c.iter
	lr := c.tr.LR()

	// Everyone live but the late holds the state of k and applies Merged.
	var next []string
	for _, id := range c.order {
		if !slices.Contains(late, id) {
			next = append(next, id)
		}
	}
	// The parts not sent ahead: all but the last go out as partial
	// Merged, the last in the final one. (With every part sent ahead —
	// possible only when members left — the final repeats the last part.)
	// Zero parts (frozen layers) never go out.
	var unsent []int
	last := 0
	for j := c.bar.parts() - 1; j >= 0; j-- {
		if c.bar.zero[j] {
			continue
		}
		last = j
		if !c.bar.sent[j] {
			unsent = append(unsent, j)
		}
	}
	if len(unsent) == 0 {
		unsent = []int{last}
	}
	for _, j := range unsent[:len(unsent)-1] {
		m := c.mergePart(j, true)
		for _, id := range next {
			c.sendMerged(id, m)
		}
	}
	msg := c.mergePart(unsent[len(unsent)-1], false)
	c.tr.Net.B.Upload(c.tr.Net.Grads, c.applied)
	c.tr.Apply()
	c.iter = uint64(c.tr.Iter)
	// The master net runs no forward pass: its batch-norm statistics are
	// the mean of the workers'.
	var bn wire.Floats
	if n := c.tr.Net.State.Len(); n > 0 {
		bn = make(wire.Floats, n)
		if c.bar.mergeState(bn) {
			c.tr.Net.B.Upload(c.tr.Net.State, bn)
		} else {
			bn = nil
		}
	}
	msg.LR, msg.State = lr, bn
	if !c.cfg.NoWeightsHash {
		msg.WeightsHash = state.NetHash(c.tr.Net)
	}
	down := c.bytesDown + int64(len(next))*payloadBytes(msg.Gradient, msg.Enc)
	c.event(Event{Kind: EventMerged, Iteration: k, Workers: workers, Samples: samples, Loss: loss, LR: lr,
		BytesUp: c.bar.bytesUp, BytesDown: down})

	if c.cfg.Iterations > 0 && c.iter >= c.cfg.Iterations {
		for _, id := range next {
			c.send(id, msg)
		}
		c.finish("the run reached its iterations")
		return
	}
	if len(next) == 0 {
		// Only late workers are left: they all need the state anyway.
		c.reopen()
		return
	}
	msg.BatchSizes = c.open(next, false)
	for _, id := range next {
		c.send(id, msg)
	}
	if len(late) > 0 {
		st := state.Capture(c.tr.Net, c.tr.Opt)
		for _, id := range late {
			c.sendResync(id, st, "late for iteration "+fmt.Sprint(k))
		}
	}
}

func (c *Core) sendResync(id string, st wire.ModelState, why string) {
	c.event(Event{Kind: EventResync, Peer: id, Iteration: c.iter, Text: why})
	c.send(id, &wire.ResyncAnswer{Header: wire.Header{Iteration: c.iter}, ModelState: st})
}

func (c *Core) sendWelcome(id string, st wire.ModelState, batch int) {
	c.send(id, &wire.Welcome{
		Header:      wire.Header{Iteration: c.iter},
		WorkerID:    id,
		Model:       c.model.Name,
		ModelConfig: c.mcfg,
		ModelState:  st,
		BatchSize:   batch,
		Session:     c.session,
	})
}

// goodbye sends id the Goodbye that ends its session, with the hub's
// current weights as the final ones.
func (c *Core) goodbye(id, reason string) {
	st := state.Capture(c.tr.Net, nil)
	c.send(id, &wire.Goodbye{Header: wire.Header{Iteration: c.iter}, Reason: reason,
		FinalWeights: st.Weights, FinalState: st.State})
}

// finish sends every live worker Goodbye with the final weights and ends
// the run.
func (c *Core) finish(reason string) {
	st := state.Capture(c.tr.Net, nil)
	for _, id := range c.order {
		c.send(id, &wire.Goodbye{Header: wire.Header{Iteration: c.iter}, Reason: reason,
			FinalWeights: st.Weights, FinalState: st.State})
	}
	c.phase = phaseDone
	c.ready.Done = true
	c.event(Event{Kind: EventDone, Iteration: c.iter, Text: reason})
}
