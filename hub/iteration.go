package hub

import (
	"fmt"
	"math"
	"slices"

	"github.com/cotrain/cotrain/hub/internal/avg"
	"github.com/cotrain/cotrain/sync/wire"
)

// This file is the core's iteration: a push into the barrier, the
// barrier closing (merge, the step asked of the driver, then Merged),
// opening the next iteration with its batch shares, and the messages that
// end or resync a worker.

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
		if err := m.State.CheckLen("batch-norm state", c.model.stateLen); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrBadLength, p.id, err)
		}
		if i := avg.FirstNonFinite(m.State); i >= 0 {
			return fmt.Errorf("%w: %q: batch-norm state[%d] = %v", ErrNonFinite, p.id, i, m.State[i])
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
	c.noteBattery(p, m.Battery)
	p.misses = 0
	if c.bar.done(a) && a.nanos > 0 {
		// The whole backward pass is in: the largest part time is the
		// compute time.
		ps := float64(a.nanos) / float64(a.samples)
		p.perSample = smooth(p.perSample, ps, c.cfg.Smoothing, p.measured)
		p.measured = true
	}
	if c.bar.done(a) {
		c.iterTicks(p, batch)
	}
	c.check()
	return nil
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
	// Parked workers (Config.Park, Config.BatteryFloor) get no share: they
	// stay idle, apply the Merged of the iteration and are weighed again at
	// the next open.
	act := c.active(ids)
	if len(act) == 0 && len(ids) > 0 {
		// Every worker is parked for its battery: nothing to open until
		// one reports a charger (Status).
		c.phase = phaseParked
		for _, id := range ids {
			c.peers[id].role = roleIdle
		}
		c.event(Event{Kind: EventParked, Iteration: c.iter, Text: fmt.Sprintf(
			"every worker's battery is discharging below the floor of %g%%", c.cfg.BatteryFloor)})
		return nil
	}
	shares := c.shares(act)
	c.bar.reset(c.iter, shares)
	c.bar.deadline = c.deadlineFor(shares)
	c.partials, c.bytesDown = nil, 0
	c.phase = phaseOpen
	var st wire.ModelState
	if welcome {
		st = c.model.master.Snapshot(true)
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
	if c.cfg.Batch == Energy {
		c.splitEnergy(sizes, ids)
	} else if c.cfg.Batch == Adaptive {
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
		if sizes[i] > 0 { // the energy policy may spare a worker
			out[id] = sizes[i]
		}
	}
	return out
}

// closing is an iteration closed whose optimizer step is out with the
// driver (Ready.Apply): what Applied needs to tell the workers.
type closing struct {
	k          uint64
	late, next []string     // the members that missed the deadline; the workers that get Merged k
	msg        *wire.Merged // the final Merged, without its learning rate and hash
	bn         wire.Floats  // the merged batch-norm statistics, or nil
	workers    int          // members merged
	samples    int          // samples merged
	loss       float64      // their mean loss
}

// close merges the open iteration and asks the driver for the step
// (Ready.Apply); Applied then tells every worker holding the state of
// c.iter. late lists the members that missed the deadline: they get the
// full new state instead.
func (c *Core) close(late []string) {
	cl := &closing{k: c.iter, late: late, workers: len(c.bar.pushes)}
	cl.samples, cl.loss = c.bar.totals()

	// Everyone live but the late holds the state of k and applies Merged.
	for _, id := range c.order {
		if !slices.Contains(late, id) {
			cl.next = append(cl.next, id)
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
		for _, id := range cl.next {
			c.sendMerged(id, m)
		}
	}
	cl.msg = c.mergePart(unsent[len(unsent)-1], false)
	// The master net runs no forward pass: its batch-norm statistics are
	// the mean of the workers'.
	if n := c.model.stateLen; n > 0 {
		cl.bn = make(wire.Floats, n)
		if !c.bar.mergeState(cl.bn) {
			cl.bn = nil
		}
	}
	c.closing = cl
	c.ready.Apply = &ApplyRequest{Iteration: cl.k, Gradient: c.applied, State: cl.bn, Hash: !c.cfg.NoWeightsHash}
}

// Applied reports that the driver took the step of Ready().Apply: the
// core opens the next iteration and queues the Merged (with d's learning
// rate and hash), the late workers' ResyncAnswers, or the Goodbyes when the
// run has reached its iterations. A report for no request, or for another
// iteration, is refused with ErrUnexpected and changes nothing.
func (c *Core) Applied(d ApplyDone) error {
	cl := c.closing
	switch {
	case cl == nil:
		return fmt.Errorf("%w: step of iteration %d applied, none was asked for", ErrUnexpected, d.Iteration)
	case d.Iteration != cl.k:
		return fmt.Errorf("%w: step of iteration %d applied, iteration %d's was asked for", ErrUnexpected, d.Iteration, cl.k)
	}
	c.closing, c.ready.Apply = nil, nil
	c.iter = cl.k + 1
	msg, next := cl.msg, cl.next
	msg.LR, msg.State = d.LR, cl.bn
	if !c.cfg.NoWeightsHash {
		msg.WeightsHash = d.WeightsHash
	}
	down := c.bytesDown + int64(len(next))*payloadBytes(msg.Gradient, msg.Enc)
	c.event(Event{Kind: EventMerged, Iteration: cl.k, Workers: cl.workers, Samples: cl.samples, Loss: cl.loss, LR: d.LR,
		BytesUp: c.bar.bytesUp, BytesDown: down})
	c.opened(cl)
	// A Register that came with the step (register.go) is handled now,
	// against the state after it.
	if h := c.held; h != nil {
		c.held = nil
		if c.phase == phaseDone {
			c.goodbye(h.from, "the run is over")
		} else if err := c.register(h.from, h.m); err != nil {
			c.event(Event{Kind: EventRefused, Peer: h.from, Iteration: c.iter, Err: err})
		}
	}
	return nil
}

// opened ends closing cl after its step: the Merged goes to the workers
// that hold the state of cl.k, which open the next iteration (or the run
// ends), and the late get the state after the step.
func (c *Core) opened(cl *closing) {
	msg, next, late := cl.msg, cl.next, cl.late
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
		st := c.model.master.Snapshot(true)
		for _, id := range late {
			c.sendResync(id, st, "late for iteration "+fmt.Sprint(cl.k))
		}
	}
}

// mustNotApply panics when an input other than Applied comes while an
// ApplyRequest is out: the driver broke its contract (doc.go), and the core
// would answer from a master that has not stepped.
func (c *Core) mustNotApply(input string) {
	if c.closing != nil {
		panic(fmt.Sprintf("hub: %s while the step of iteration %d is out (Ready.Apply): call Applied first", input, c.closing.k))
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
		Model:       c.model.name,
		ModelConfig: c.model.config,
		ModelState:  st,
		BatchSize:   batch,
		Session:     c.session,
	})
}

// goodbye sends id the Goodbye that ends its session, with the hub's
// current weights as the final ones.
func (c *Core) goodbye(id, reason string) {
	st := c.model.master.Snapshot(false)
	c.send(id, &wire.Goodbye{Header: wire.Header{Iteration: c.iter}, Reason: reason,
		FinalWeights: st.Weights, FinalState: st.State})
}

// finish sends every live worker Goodbye with the final weights and ends
// the run.
func (c *Core) finish(reason string) {
	st := c.model.master.Snapshot(false)
	for _, id := range c.order {
		c.send(id, &wire.Goodbye{Header: wire.Header{Iteration: c.iter}, Reason: reason,
			FinalWeights: st.Weights, FinalState: st.State})
	}
	c.phase = phaseDone
	c.ready.Done = true
	c.event(Event{Kind: EventDone, Iteration: c.iter, Text: reason})
}
