package hub

import (
	"fmt"
	"math"
	"slices"

	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// This file is the core's iteration: a push into the barrier, the
// barrier closing (merge, step, Merged), opening the next iteration with
// its batch shares, and the messages that end or resync a worker.

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
	// Parked workers (Config.Park) get no share: they stay idle, apply
	// the Merged of the iteration and are weighed again at the next open.
	shares := c.shares(c.active(ids))
	c.bar.reset(c.iter, shares)
	c.bar.deadline = c.deadlineFor(shares)
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
