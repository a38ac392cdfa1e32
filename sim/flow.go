package sim

import (
	"fmt"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/worker"
)

// This file moves messages and computes between the cores, as the real
// drivers do (worker.Driver, hub.Driver), with virtual time: every message
// is handed over as a copy on the phone's link (link.go) and takes the
// network's time for its frame's exact length; every compute takes the
// device's time.

// flushWorker handles p's Ready: messages to the hub, a compute to run.
func (r *runner) flushWorker(p *phone) {
	rd := p.core.Ready()
	p.core.Advance()
	for _, m := range rd.Messages {
		r.sendUp(p, m)
	}
	for _, e := range rd.Events {
		switch e.Kind {
		case worker.EventMismatch:
			if !p.resyncing { // not a diverge fault's (afterWorkerInput)
				r.fail(fmt.Errorf("%w: %s: %s", ErrInvariant, p.spec.Name, e.Text))
				return
			}
			r.note(fmt.Sprintf("%s: mismatch: %s", p.spec.Name, e.Text))
		case worker.EventResynced:
			if p.resyncing {
				// The hub's state is loaded: the weights must be its
				// own again, bit for bit.
				if err := r.check.weights(p.spec.Name, p.core.Iteration(), p.core.Trainer().Net); err != nil {
					r.fail(err)
					return
				}
				p.resyncing = false
				r.res.Resynced++
				r.note(fmt.Sprintf("%s: resynchronised: its weights are the hub's again at iteration %d", p.spec.Name, p.core.Iteration()))
			}
		case worker.EventRefused, worker.EventResync, worker.EventDiscarded:
			r.note(fmt.Sprintf("%s: %s %s %v", p.spec.Name, e.Kind, e.Text, e.Err))
		}
	}
	if rd.Compute != nil {
		r.startCompute(p, *rd.Compute)
	}
	if rd.Done && p.alive {
		p.stats.end(r.clk.now, r.t0)
	}
}

// startCompute runs the forward and backward pass now (the gradient is
// real) and reports it to the core when the device would have finished.
// The core holds messages that arrive meanwhile, as with a real driver.
func (r *runner) startCompute(p *phone, req worker.ComputeRequest) {
	tr := p.core.Trainer()
	size := tr.Net.In.Size()
	if len(p.labels) < req.Batch {
		p.x, p.labels = make([]float32, req.Batch*size), make([]int32, req.Batch)
	}
	p.loader.SetBatch(req.Batch)
	n, _ := p.loader.Next(p.x, p.labels)
	loss := r.memo.gradient(tr, req.Iteration, p.x[:n*size], p.labels[:n])
	start := max(r.clk.now, p.busy)
	if r.t0 < 0 && r.distributed() {
		r.t0 = start
	}
	dur := p.dev.compute(start, r.sampleFLOPs*float64(n))
	if p.dev.throttled() {
		p.stats.Throttled++
	}
	p.busy = start + dur
	p.stats.Compute += float64(dur) / 1e9
	p.meter.computed(float64(dur) / 1e9)
	p.stats.Samples += n
	r.segment(p.spec.Name, "compute", start, start+dur, req.Iteration)
	r.scheduleParts(p, req, start, dur, n, loss)
	done := worker.ComputeDone{Iteration: req.Iteration, Samples: n, Loss: loss, ComputeNanos: dur}
	gen := p.gen
	r.clk.at(start+dur, func() {
		if p.gen != gen {
			return // the phone left meanwhile
		}
		before := p.core.Iteration()
		if err := p.core.Computed(done); err != nil {
			r.note(fmt.Sprintf("%s: compute refused: %v", p.spec.Name, err))
		}
		r.afterWorkerInput(p, before)
		r.flushWorker(p)
	})
}

// sendUp sends m from p to the hub over the network.
func (r *runner) sendUp(p *phone, m wire.Message) {
	size := r.frameSize(m)
	now := r.clk.now
	start, end, arrive := r.net.transfer(now, p.spec.Name, size)
	r.radio(p, true, size, now, start, end)
	p.stats.AirWait += r.span(now, start)
	p.stats.Send += r.span(start, arrive)
	p.stats.BytesSent += int64(size)
	r.countGrad(m, size)
	r.trainAir(m, start, arrive-r.net.latency)
	it := m.Head().Iteration
	r.segment(p.spec.Name, "wait-air", now, start, it)
	r.segment(p.spec.Name, "send", start, arrive, it)
	arrive, ok := r.routed(p, m, true, start, arrive)
	if !ok {
		return
	}
	c, err := r.handover(m)
	if err != nil {
		r.fail(fmt.Errorf("sim: %s sends %s: %w", p.spec.Name, m.Kind(), err))
		return
	}
	p.link.up = append(p.link.up, c)
	gen := p.gen
	r.clk.at(arrive, func() {
		if p.gen != gen {
			return
		}
		r.deliverUp(p, arrive-start)
	})
}

// deliverUp hands the hub the next message from p. xfer is how long the
// message was on the network: a push's is reported to the hub as the
// worker's communication cost (hub.Core.ObserveComm).
func (r *runner) deliverUp(p *phone, xfer int64) {
	m, err := recv(&p.link.up)
	if err != nil {
		r.fail(fmt.Errorf("sim: hub receives from %s: %w", p.spec.Name, err))
		return
	}
	push, isPush := m.(*wire.Push)
	if isPush {
		r.hub.ObserveComm(p.spec.Name, xfer)
	}
	if err := r.hub.Step(p.spec.Name, m); err != nil {
		r.note(fmt.Sprintf("hub refused %s from %s: %v", m.Kind(), p.spec.Name, err))
	} else {
		if isPush {
			r.pushedAt = r.clk.now
			if err := r.check.pushed(push); err != nil {
				r.fail(err)
			}
		}
		r.accepted(p, m)
	}
	r.flushHub()
}

// flushHub handles the hub's Ready: checks and evaluation at every merge,
// then the messages, sent once the merge is done (the hub's compute time).
func (r *runner) flushHub() {
	for {
		if err := hub.ApplyPending(r.hub, r.hubTr); err != nil {
			r.fail(fmt.Errorf("sim: %w", err))
			return
		}
		rd := r.hub.Ready()
		r.hub.Advance()
		r.hubMerges(rd) // checks and times every merged part before the close
		for _, e := range rd.Events {
			if e.Kind == hub.EventLate || e.Kind == hub.EventRetry {
				r.res.DeadlineWait += float64(r.clk.now-max(r.pushedAt, r.openedAt)) / 1e9
				break
			}
		}
		for _, e := range rd.Events {
			if e.Kind == hub.EventMerged || e.Kind == hub.EventRetry || e.Kind == hub.EventStarted {
				r.openedAt = r.clk.now
			}
		}
		for _, e := range rd.Events {
			if p := r.byName[e.Peer]; p != nil && (e.Kind == hub.EventLeft || e.Kind == hub.EventJoined) {
				p.forgotten = e.Kind == hub.EventLeft
			}
			switch e.Kind {
			case hub.EventMerged:
				r.merged(e, rd.Messages)
			case hub.EventRetry:
				r.check.reset()
				r.note(fmt.Sprintf("hub: %s %d: %s", e.Kind, e.Iteration, e.Text))
			case hub.EventWorkerParked, hub.EventWorkerResumed, hub.EventLeft, hub.EventJoined,
				hub.EventLate, hub.EventDropped, hub.EventStarted, hub.EventResync, hub.EventParked:
				r.note(fmt.Sprintf("hub: %s %s (iteration %d) %s", e.Kind, e.Peer, e.Iteration, e.Text))
				if e.Kind == hub.EventWorkerParked {
					r.res.Parks++
				}
			}
		}
		at := max(r.clk.now, r.hubFree)
		for _, env := range rd.Messages {
			r.sendDown(env.To, env.Msg, at)
		}
		if rd.Done {
			r.hubDone = true
		}
		if r.stop != "" && !rd.Done {
			r.hub.Stop(r.stop)
			r.stop = ""
			continue
		}
		return
	}
}

// sendDown sends m from the hub to the phone named to, at time at.
func (r *runner) sendDown(to string, m wire.Message, at int64) {
	p := r.byName[to]
	if p == nil || !p.alive {
		return // gone: the hub learns it through Leave
	}
	size := r.frameSize(m)
	start, end, arrive := r.net.transfer(at, to, size)
	r.radio(p, false, size, at, start, end)
	p.stats.AirWait += r.span(at, start)
	p.stats.Receive += r.span(start, arrive)
	p.stats.BytesReceived += int64(size)
	r.trainAir(m, start, arrive-r.net.latency)
	r.res.HubBytesSent += int64(size)
	r.countGrad(m, size)
	it := m.Head().Iteration
	r.segment(to, "wait-air", at, start, it)
	r.segment(to, "receive", start, arrive, it)
	arrive, ok := r.routed(p, m, false, start, arrive)
	if !ok {
		return
	}
	c, err := r.handover(m)
	if err != nil {
		r.fail(fmt.Errorf("sim: hub sends %s to %s: %w", m.Kind(), to, err))
		return
	}
	p.link.down = append(p.link.down, c)
	gen := p.gen
	r.clk.at(arrive, func() {
		if p.gen == gen {
			r.deliverDown(p)
		}
	})
}

// deliverDown hands p's core the next message from the hub.
func (r *runner) deliverDown(p *phone) {
	m, err := recv(&p.link.down)
	if err != nil {
		r.fail(fmt.Errorf("sim: %s receives: %w", p.spec.Name, err))
		return
	}
	before := p.core.Iteration()
	if err := p.core.Step("hub", m); err != nil {
		r.note(fmt.Sprintf("%s refused %s: %v", p.spec.Name, m.Kind(), err))
	}
	r.afterWorkerInput(p, before)
	r.flushWorker(p)
}

// afterWorkerInput checks a phone whose state moved to a new iteration:
// its weights must be the hub's at that iteration. An applied Merged also
// costs the phone its optimizer step's time before it computes again.
func (r *runner) afterWorkerInput(p *phone, before uint64) {
	now := p.core.Iteration()
	if p.core.Trainer() == nil || now == before {
		return
	}
	if now == before+1 {
		// One optimizer step applied: about 4 operations per parameter.
		p.busy = max(p.busy, r.clk.now+int64(4*float64(r.paramCount)/p.dev.flops*1e9))
	}
	if n := p.core.Mismatches(); n > p.mismatches && p.drifted {
		// The phone's hash check found what the checker would: a diverge
		// fault left its weights off the hub's. It has asked for the
		// hub's state; its weights are checked once that is loaded
		// (flushWorker). A mismatch without such a fault fails below.
		p.mismatches, p.drifted, p.resyncing = n, false, true
		r.res.Mismatches++
		return
	}
	if _, kept := r.check.snaps[now]; p.forgotten && !kept {
		// Updates that waited on the network for a phone the hub has
		// since dropped: too old to check, and its Goodbye follows them.
	} else if err := r.check.weights(p.spec.Name, now, p.core.Trainer().Net); err != nil {
		r.fail(err)
	}
	if before == 9 && now == 10 && !p.reached {
		p.reached = true
		r.res.TenIterations = max(r.res.TenIterations, r.rel(max(r.clk.now, p.busy)))
	}
}

// merged runs at every merge: the merged gradient is checked against the
// pushes the hub received, the hub's weights are kept for the workers'
// checks, and the accuracy is evaluated when due.
func (r *runner) merged(e hub.Event, msgs []hub.Envelope) {
	r.check.reset()
	k := e.Iteration + 1
	r.check.snapshot(k, r.hubTr.Net)
	r.res.Iterations = int(k)
	r.res.Samples += e.Samples
	r.res.Checks++
	end := r.rel(r.hubFree)
	r.res.End = end
	r.res.TrainLoss = append(r.res.TrainLoss, LossPoint{Iteration: int(k), Seconds: end, Loss: e.Loss})
	if r.opt.Progress != nil {
		defer func() {
			r.opt.Progress(Progress{Run: r.spec.Name, Iteration: int(k), Of: r.iterations(), SimSeconds: end, Accuracy: r.res.lastAccuracy()})
		}()
	}
	// The stop rule's evaluations, and one at the end for the report.
	if !r.stopper.Due(k) && int(k) != r.iterations() {
		return
	}
	acc, loss := r.memo.evaluate(r.hubTr, r.d.Test)
	joules := r.energyNow()
	r.res.Curve = append(r.res.Curve, Point{Iteration: int(k), Seconds: end, Accuracy: acc, Loss: loss, Joules: joules})
	why := r.stopper.Observe(acc, loss)
	if r.stopper.Reached() && r.res.TimeToTarget < 0 {
		r.res.TimeToTarget, r.res.EnergyToTarget = end, joules
	}
	if why != "" {
		r.stop = why
		r.note(fmt.Sprintf("hub: %s at iteration %d", r.stop, k))
	}
}

// segment records a span of one device's time for the timeline plot
// (iterations below Options.Timeline only).
func (r *runner) segment(dev, kind string, start, end int64, it uint64) {
	if end <= start || int(it) >= r.opt.timeline() {
		return
	}
	// Absolute times: finish shifts them to the start of training.
	r.res.Timeline = append(r.res.Timeline, Segment{Device: dev, Kind: kind,
		Start: float64(start) / 1e9, End: float64(end) / 1e9, Iteration: int(it)})
}

// span returns the seconds of [start, end] after the start of training.
func (r *runner) span(start, end int64) float64 {
	if r.t0 < 0 {
		return 0
	}
	return float64(end-max(start, r.t0)) / 1e9
}

// trainAir accounts the airtime of the training traffic (pushes and
// merged gradients), for Result.MediumBusy.
func (r *runner) trainAir(m wire.Message, start, end int64) {
	switch m.(type) {
	case *wire.Push, *wire.Merged:
		r.air += end - start
	}
}
