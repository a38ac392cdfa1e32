package main

import (
	"fmt"
	"io"
	"time"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/watch"
	"github.com/cotrain/cotrain/worker"
)

// observer turns what the worker's session sees into events on a bus: the
// welcome, each iteration as this worker lived it, resyncs and the end. It
// runs on the session's goroutine and only publishes, which never blocks.
//
// An iteration on a worker: compute is the pass the worker timed (the
// ComputeNanos it pushes); wait is everything from the push going out to the
// hub's merged update for that iteration being applied here: the push's
// trip, the barrier waiting for the other workers, the update's trip. The
// worker cannot tell those apart; the hub's dashboard does.
type observer struct {
	bus     *watch.Bus
	session watch.Session
	now     func() time.Time
	// The iteration in flight.
	cycle   time.Time // when the previous merged update was applied (or the welcome)
	pushed  time.Time // when its (last) push went out
	compute int64
	samples int
	bytes   int64
	batch   int     // batch of the compute asked for next
	loss    float64 // of the last push
	// Totals.
	pushes int
	total  int64
	first  time.Time
}

func newObserver(bus *watch.Bus, s watch.Session) *observer {
	return &observer{bus: bus, session: s, now: time.Now}
}

// ready sees every Ready of the session's cores.
func (o *observer) ready(core *worker.Core, rd worker.Ready) {
	now := o.now()
	for _, m := range rd.Messages {
		if p, ok := m.(*wire.Push); ok {
			o.pushed, o.samples = now, p.Samples
			o.compute = max(o.compute, p.ComputeNanos)
			o.bytes += 4*int64(len(p.Gradient)) + int64(len(p.Enc))
		}
	}
	if rd.Compute != nil {
		o.batch = rd.Compute.Batch
	}
	for _, e := range rd.Events {
		switch e.Kind {
		case worker.EventWelcomed:
			name, _, meta := core.Model()
			name = models.DisplayName(name, meta)
			ses := core.Session()
			o.session.Model, o.session.Codec, o.session.Batch = name, ses.Compression, ses.GlobalBatch
			o.session.Iterations, o.session.Iteration, o.session.PeerID = ses.Iterations, e.Iteration, e.Text
			s := o.session
			o.bus.Publish("session", &s)
			o.bus.Publish("welcomed", &watch.Peer{Iteration: e.Iteration, ID: e.Text, Name: o.session.WorkerName, Backend: o.session.Backend})
			o.cycle = now
			o.reset()
		case worker.EventPushed:
			o.pushes++
			o.loss = e.Loss
			if o.first.IsZero() {
				o.first = now
			}
		case worker.EventMerged:
			o.merged(core, e.Iteration, now)
		case worker.EventResynced:
			o.cycle = now
			o.reset()
			o.bus.Publish("resynced", &watch.Peer{Iteration: e.Iteration, ID: core.ID(), Name: o.session.WorkerName})
		case worker.EventMismatch, worker.EventResync, worker.EventDiscarded, worker.EventRefused, worker.EventDone:
			p := &watch.Peer{Iteration: e.Iteration, ID: core.ID(), Name: o.session.WorkerName, Text: e.Text}
			if e.Err != nil {
				p.Text = e.Err.Error()
			}
			kind := e.Kind.String()
			if e.Kind == worker.EventDone {
				kind = watch.KindEnded
			}
			o.bus.Publish(kind, p)
		}
	}
}

func (o *observer) reset() { o.compute, o.samples, o.bytes, o.pushed = 0, 0, 0, time.Time{} }

// merged publishes iteration k as this worker saw it, if it pushed for it.
func (o *observer) merged(core *worker.Core, k uint64, now time.Time) {
	defer func() { o.cycle = now; o.reset() }()
	if o.pushed.IsZero() {
		return // joined after this iteration's shares: it only applied the update
	}
	o.total += int64(o.samples)
	compute := time.Duration(o.compute)
	// Iteration counts the iterations done, as the hub's progress does:
	// merging iteration k (from 0) makes k+1 of them.
	pr := &watch.Progress{Iteration: k + 1, Loss: o.loss, Samples: o.samples, Pushes: o.pushes, BytesUp: o.bytes,
		Seconds: now.Sub(o.cycle).Seconds(),
		Workers: []watch.Tick{{ID: core.ID(), Name: o.session.WorkerName, Batch: o.samples, Next: o.batch,
			ComputeMS: ms(compute), WaitMS: ms(max(now.Sub(o.cycle)-compute, 0)), BytesUp: o.bytes}}}
	if el := now.Sub(o.first).Seconds(); el > 0 {
		pr.SamplesPerSec = float64(o.total) / el
	}
	o.bus.Publish(watch.KindProgress, pr)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// jsonSink writes every event as a JSON line, progress every logEvery
// pushes.
func jsonSink(w io.Writer, logEvery int) func(watch.Event) {
	return func(e watch.Event) {
		if p, ok := e.Data.(*watch.Progress); ok && p.Pushes%logEvery != 0 {
			return
		}
		watch.WriteLine(w, e)
	}
}

// textSink writes the worker's progress lines.
func textSink(w io.Writer, logEvery int, start time.Time) func(watch.Event) {
	return func(e watch.Event) {
		switch d := e.Data.(type) {
		case *watch.Progress:
			if d.Pushes%logEvery == 0 {
				fmt.Fprintf(w, "iter %d loss %.4f (%d pushes in %.0fs)\n", d.Iteration, d.Loss, d.Pushes, e.Time.Sub(start).Seconds())
			}
		case *watch.Peer:
			if e.Kind == "welcomed" {
				fmt.Fprintf(w, "joined at iteration %d\n", d.Iteration)
			}
		}
	}
}
