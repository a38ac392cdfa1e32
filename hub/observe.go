package hub

import (
	"slices"
	"strings"
	"time"

	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/watch"
)

// observer turns what the driver sees into events on Driver.Watch: the
// core's events with the workers' names, and each closed iteration with
// where every member's time went as the hub saw it. It runs on Run's
// goroutine and only ever publishes, which never blocks (watch.Bus), so the
// barrier never waits for an observer.
type observer struct {
	bus *watch.Bus
	now func() time.Time
	// names and kinds keep every peer that registered, also after it left
	// (a reconnect's Left and Joined come in one Ready): a few bytes for
	// each distinct worker identity the hub has accepted.
	names map[string]string // peer id → the worker's --name (Register.Device)
	kinds map[string]string // peer id → backend
	// The open iteration: when it opened, and per member what its pushes
	// said and when the last arrived.
	opened  time.Time
	started time.Time
	samples int64
	pushes  map[string]*pushSeen
	down    map[string]int64 // merged payload bytes sent to each worker since the last close
}

type pushSeen struct {
	at      time.Time
	compute int64 // the largest ComputeNanos of its parts
	samples int
	bytes   int64
	span    time.Duration // the transport's time to receive the last part, if known
}

func newObserver(bus *watch.Bus) *observer {
	now := time.Now
	if bus.Now != nil {
		now = bus.Now
	}
	return &observer{bus: bus, now: now, names: map[string]string{}, kinds: map[string]string{},
		pushes: map[string]*pushSeen{}, down: map[string]int64{}}
}

// step sees a message from a worker that the core accepted; span is how
// long the transport took to receive it (0 if it cannot tell).
func (o *observer) step(from string, m wire.Message, span time.Duration) {
	switch m := m.(type) {
	case *wire.Register:
		o.names[from], o.kinds[from] = m.Device, m.Backend
	case *wire.Push:
		p := o.pushes[from]
		if p == nil {
			p = &pushSeen{}
			o.pushes[from] = p
		}
		p.at, p.span = o.now(), span
		p.compute = max(p.compute, m.ComputeNanos)
		p.samples = m.Samples
		p.bytes += payloadBytes(m.Gradient, m.Enc)
	}
}

// ready sees a Ready after its messages were queued; now is the time read
// before they were (an iteration opens, and closes, when its Merged leaves,
// not when the driver gets round to observing it).
func (o *observer) ready(rd Ready, now time.Time) {
	var sizes wire.BatchSizes
	for _, env := range rd.Messages {
		if m, ok := env.Msg.(*wire.Merged); ok {
			o.down[env.To] += payloadBytes(m.Gradient, m.Enc)
			if !m.Partial && m.BatchSizes != nil {
				sizes = m.BatchSizes
			}
		}
	}
	for _, e := range rd.Events {
		switch e.Kind {
		case EventMerged:
			o.merged(e, sizes, now)
			continue
		case EventStarted:
			o.opened, o.started = now, now
		case EventRetry:
			// The iteration reopens: its pushes were dropped with it.
			clear(o.pushes)
			o.opened = now
		case EventParked:
			clear(o.pushes)
		}
		kind := e.Kind.String()
		if e.Kind == EventDone {
			kind = watch.KindEnded // "done" is the command's own last event
		}
		p := &watch.Peer{Iteration: e.Iteration, ID: e.Peer, Workers: e.Workers, Text: e.Text}
		if e.Peer != "" {
			p.Name = o.names[e.Peer]
		}
		switch e.Kind {
		case EventJoined:
			p.Backend, p.Text = o.kinds[e.Peer], ""
		case EventRefused:
			if e.Err != nil {
				p.Text = e.Err.Error()
			}
		case EventBattery:
			p.Battery = &watch.Battery{Percent: float64(e.Battery.Percent), Status: e.Battery.Status.String()}
		}
		o.bus.Publish(kind, p)
	}
}

// merged publishes iteration e.Iteration's progress.
func (o *observer) merged(e Event, next wire.BatchSizes, now time.Time) {
	if o.started.IsZero() {
		o.started, o.opened = now, now // resumed into an open iteration
	}
	o.samples += int64(e.Samples)
	pr := &watch.Progress{Iteration: e.Iteration + 1, Loss: e.Loss, LR: float64(e.LR), Samples: e.Samples,
		BytesUp: e.BytesUp, BytesDown: e.BytesDown, Seconds: now.Sub(o.opened).Seconds()}
	if el := now.Sub(o.started).Seconds(); el > 0 {
		pr.SamplesPerSec = float64(o.samples) / el
	}
	for id, p := range o.pushes {
		cycle := p.at.Sub(o.opened)
		compute := time.Duration(p.compute)
		comm := max(cycle-compute, 0)
		pr.Workers = append(pr.Workers, watch.Tick{ID: id, Name: o.names[id], Batch: p.samples, Next: next[id],
			ComputeMS: ms(compute), CommMS: ms(comm), WaitMS: ms(now.Sub(p.at)), PushMS: ms(p.span),
			BytesUp: p.bytes, BytesDown: o.down[id]})
	}
	// Members that pushed nothing (late, or left) and workers that only
	// received (joined mid-iteration, parked) still get their share.
	for id, b := range next {
		if _, ok := o.pushes[id]; !ok {
			pr.Workers = append(pr.Workers, watch.Tick{ID: id, Name: o.names[id], Next: b, BytesDown: o.down[id]})
		}
	}
	slices.SortFunc(pr.Workers, func(a, b watch.Tick) int { return strings.Compare(a.ID, b.ID) })
	clear(o.pushes)
	clear(o.down)
	o.opened = now
	o.bus.Publish(watch.KindProgress, pr)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
