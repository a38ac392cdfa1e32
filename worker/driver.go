package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

// Batches is where a worker's mini-batches come from; *data.Loader
// satisfies it.
type Batches interface {
	SetBatch(n int)
	Next(x []float32, labels []int32) (n int, epochDone bool)
}

// leaveLinger is how long a leaving worker waits, after its Goodbye, for
// the hub to close the connection (the hub's sign that it read the
// Goodbye) before closing it itself.
const leaveLinger = time.Second

// sendGrace is how long a send in progress may go on after the worker was
// told to stop.
const sendGrace = 2 * time.Second

// Driver runs a Core over one connection to the hub: a reader goroutine
// hands the hub's messages to Run's goroutine, which owns the core, and the
// forward/backward pass runs on a goroutine of its own so that messages
// keep flowing while it computes (the core holds those that would change
// the network until the pass is reported).
type Driver struct {
	Core *Core
	Conn transport.Conn
	Data Batches
	// Log receives the core's events.
	Log *slog.Logger
	// OnReady, when set, sees every Ready on Run's goroutine before Advance.
	OnReady func(Ready)
	// Slowdown, for tests, makes the worker play a slower device: it
	// sleeps (Slowdown−1) times the time the pass took, inside the time it
	// reports, in stretches as the backward pass hands out its parts (so
	// that a part is ready as much later as the whole pass). 0 or 1 means
	// none.
	Slowdown float64

	// OnPass, when set, is called on Run's goroutine with the timing of
	// each pass and its Pushes, once they are sent.
	OnPass func(PassTiming)

	// Battery, when set, reads the phone's battery (PowerSupply.Read):
	// Run reads it every BatteryEvery and hands the reading to the core
	// (Core.SetBattery), which sends it with its pushes and, when it
	// changed, in a Status. A reading that fails is skipped.
	Battery      func() (wire.Battery, error)
	BatteryEvery time.Duration

	pass   pass   // the compute goroutine's buffers (driver_pass.go)
	timing timing // for OnPass
}

// ErrHubGone is returned when the connection to the hub ends before its
// Goodbye.
var ErrHubGone = errors.New("worker: connection to the hub lost")

// Run works until the hub says Goodbye (nil), refuses the worker (the
// core's error), the connection drops (ErrHubGone) or ctx ends. On ctx's end
// the worker leaves cleanly: it sends the hub a Goodbye (Core.Leave; for at
// most a second), waits for the hub to close the connection (which tells
// it the Goodbye was read; for at most leaveLinger) and closes it. Run returns only once no
// compute is running, so the data source and the trainer are free again
// for another session.
func (d *Driver) Run(ctx context.Context) error {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer d.Conn.Close()
	recvCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type inbound struct {
		msg wire.Message
		err error
	}
	inbox := make(chan inbound, 16)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			m, err := d.Conn.Recv(recvCtx)
			select {
			case inbox <- inbound{m, err}:
			case <-recvCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	// The compute goroutine reports on results, parts first and the end of
	// the pass last (driver_pass.go); it never blocks there.
	results := make(chan computed, 1)
	computing := false
	defer func() {
		for computing {
			computing = (<-results).isPart
		}
	}()
	leave := func() error {
		d.Core.Leave("the worker was stopped")
		sendCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, m := range d.Core.Ready().Messages {
			if err := d.Conn.Send(sendCtx, m); err != nil {
				break
			}
		}
		for _, e := range d.Core.Ready().Events {
			logEvent(log, e)
		}
		d.Core.Advance()
		// Wait for the hub to close the connection, which it does once it
		// has read the Goodbye, reading what it sent until then: closing
		// first, with its messages unread, could reset the connection
		// before the hub reads the Goodbye (it would log a lost connection).
		cancel() // the reader goroutine stops; Recv is called here instead
		<-readerDone
		lingerCtx, stop := context.WithTimeout(context.Background(), leaveLinger)
		defer stop()
		for {
			if _, err := d.Conn.Recv(lingerCtx); err != nil {
				break
			}
		}
		return ctx.Err()
	}
	var x []float32
	var labels []int32
	hub := d.Conn.RemotePeer()
	var batteryDue <-chan time.Time
	if d.Battery != nil && d.BatteryEvery > 0 {
		t := time.NewTicker(d.BatteryEvery)
		defer t.Stop()
		batteryDue = t.C
	}
	// A stop by the user does not cut a frame in half: a cancelled send
	// resets the stream, and the Goodbye that follows would be lost (the
	// hub would log a lost connection, not a leave). Sends get a grace
	// period after ctx is done, then they are cancelled too.
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(sendGrace, cancelSends) })
	defer stopGrace()
	for {
		rd := d.Core.Ready()
		for _, m := range rd.Messages {
			start := time.Now()
			if err := d.Conn.Send(sendCtx, m); err != nil {
				if ctx.Err() != nil {
					// Stopped by the user and the send outlived the grace
					// period: still a leave, not a lost hub.
					return leave()
				}
				return fmt.Errorf("%w: send %s: %v", ErrHubGone, m.Kind(), err)
			}
			if p, ok := m.(*wire.Push); ok && d.OnPass != nil {
				d.timing.sent(p.Part, start)
			}
		}
		if d.OnPass != nil {
			d.timing.flush(d.OnPass)
		}
		for _, e := range rd.Events {
			logEvent(log, e)
		}
		// OnReady first: it may prepare what the compute reads (the data
		// for the model a Welcome just named).
		if d.OnReady != nil {
			d.OnReady(rd)
		}
		if rd.Compute != nil {
			req := *rd.Compute
			tr := d.Core.Trainer()
			size := tr.Net.In.Size()
			if req.Batch > len(labels) {
				x, labels = make([]float32, req.Batch*size), make([]int32, req.Batch)
			}
			if need := len(req.Parts) + 1; cap(results) < need {
				results = make(chan computed, need) // empty: no pass is running
			}
			computing = true
			go d.pass.run(tr, req, d.Data, x, labels, d.Slowdown, results)
		}
		d.Core.Advance()
		if rd.Done {
			return d.Core.Err()
		}
		select {
		case in := <-inbox:
			if in.err != nil {
				if ctx.Err() != nil {
					return leave()
				}
				return fmt.Errorf("%w: %v", ErrHubGone, in.err)
			}
			if err := d.Core.Step(hub, in.msg); err != nil {
				log.Warn("refused", "kind", in.msg.Kind().String(), "err", err)
			}
		case r := <-results:
			if r.isPart {
				// Its Push goes out at the top of the loop, while the
				// backward pass goes on.
				if err := d.Core.PartDone(r.part); err != nil {
					log.Debug("part refused", "part", r.part.Part, "err", err)
				}
				break
			}
			computing = false
			d.timing.cur = PassTiming{Iteration: r.done.Iteration, Pass: r.end.Sub(r.start)}
			d.timing.start, d.timing.ended = r.start, true
			if r.err != nil {
				return r.err
			}
			if err := d.Core.Computed(r.done); err != nil {
				log.Warn("compute refused", "err", err)
			}
		case <-batteryDue:
			b, err := d.Battery()
			if err != nil {
				log.Debug("battery", "err", err)
				break
			}
			d.Core.SetBattery(b)
		case <-ctx.Done():
			return leave()
		}
	}
}

func logEvent(log *slog.Logger, e Event) {
	attrs := []any{"iteration", e.Iteration}
	if e.Text != "" {
		attrs = append(attrs, "text", e.Text)
	}
	switch e.Kind {
	case EventPushed, EventMerged:
		log.Debug(e.Kind.String(), append(attrs, "loss", e.Loss)...)
	case EventRefused, EventMismatch:
		log.Warn(e.Kind.String(), append(attrs, "err", e.Err)...)
	default:
		log.Info(e.Kind.String(), attrs...)
	}
}
