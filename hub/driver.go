package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/watch"
)

// Driver runs a Core over a transport: it owns the goroutines, the ticker
// and the connections, and the core owns every decision.
//
// Threading: one goroutine (Run's) calls every Core method. Each connection
// has a reader goroutine that hands messages to it and a writer goroutine
// with a bounded queue, so a slow or stalled worker never blocks the hub:
// a worker whose queue overflows is disconnected (and, for the core, has
// left). The reader's identity for a message is the transport's
// authenticated RemotePeer, never what the message claims.
//
// Bounds: no peer can make the hub hold more than a fixed amount. A frame
// is capped by the transport (p2p.HostConfig.MaxFrame); each connection's
// reader holds at most one decoded message while it waits for the shared
// inbox of 256 messages, and the transport reads at most one frame ahead;
// registered workers are capped by Config.MaxWorkers, connections that have
// not registered by MaxPending (more are closed at once) and each of them
// by RegisterTimeout. A peer the core rejects (allowlist, run full) is sent
// its Reject and then disconnected. So what the hub buffers from peers is
// at most (256 + 2·(MaxWorkers + MaxPending)) frames.
type Driver struct {
	Core *Core
	// Trainer is the master trainer Core was built for (Model.Trainer):
	// the driver runs the core's ApplyRequests on it (ApplyPending) before
	// handling each Ready.
	Trainer  *solver.Trainer
	Listener transport.Listener
	// Tick is the period of Core.Tick; it must equal Config.Tick for the
	// deadline to mean what the config says.
	Tick time.Duration
	// Log receives the core's events and the driver's own (connections).
	Log *slog.Logger
	// OnReady, when set, sees every Ready (after its messages are queued)
	// on Run's goroutine, before Advance: progress output and checkpoints
	// hang off it. It may read Trainer.
	OnReady func(Ready)
	// OnStep, when set, sees every message from a worker (with the peer id)
	// on Run's goroutine just before the core does: timing pushes for
	// progress output hangs off it.
	OnStep func(from string, m wire.Message)
	// Watch, when set, receives what the core decided, as events with the
	// workers' names and what the driver measured around them (observe.go):
	// JSON lines, the dashboard and metrics hang off it. Publishing never
	// blocks, so no observer can slow the barrier.
	Watch *watch.Bus
	// QueueLen, DrainTimeout, MaxPending and RegisterTimeout are the
	// DriverConfig fields of those names (what each bounds is said there);
	// 0 means DefaultDriverConfig's.
	QueueLen        int
	DrainTimeout    time.Duration
	MaxPending      int
	RegisterTimeout time.Duration

	stop string // set by RequestStop

	// The state of a Run, owned by its goroutine (but for the channels).
	log       *slog.Logger
	rules     DriverConfig
	serve     context.Context // outlives Run's ctx by the drain
	obs       *observer
	conns     map[string]*peerConn // the live connection of each peer id
	pending   int                  // connections that have not registered
	inbox     chan inbound
	accepted  chan transport.Conn
	acceptErr chan error
	ended     chan *peerConn // each connection once its reader and writer are done
	failed    error          // a step the trainer could not take: a bug of ours
}

// RequestStop ends the run after the current Ready is handled (Core.Stop
// with reason): for stopping rules decided in OnReady, such as a held-out
// loss that no longer improves. Call it only from OnReady or OnStep.
func (d *Driver) RequestStop(reason string) { d.stop = reason }

type inbound struct {
	c    *peerConn
	msg  wire.Message
	err  error
	span time.Duration // how long msg took to arrive (transport.Spanned), or 0
}

type peerConn struct {
	id   string
	conn transport.Conn
	out  chan wire.Message
	done chan struct{} // closed when the writer has finished
	read chan struct{} // closed when the reader has finished (the peer closed, or an error)
	gone bool
	// pending is true from Accept until the core accepts a Register from
	// this connection or its goroutines have ended; since is when it came.
	pending bool
	since   time.Time
}

// Run serves until the core is done (its Goodbyes delivered, or
// DrainTimeout passed) or ctx ends. When ctx ends first, the hub stops the
// run itself (Stop: Goodbye with the final weights to every worker) and
// drains as at a normal end, so SIGINT and SIGTERM lose nothing.
//
// Run's goroutine is the only one that calls the core: it waits for the
// next input (a connection accepted, a message or error read, a tick, the
// interrupt), hands it over (admit, receive, tick), then flushes the
// Ready it produced. A Driver runs once.
func (d *Driver) Run(ctx context.Context) error {
	if d.Core == nil || d.Trainer == nil || d.Listener == nil || d.Tick <= 0 {
		return errors.New("hub: driver needs a core, its trainer, a listener and a tick")
	}
	d.log = d.Log
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.rules = d.orDefaults()
	// The serving context outlives ctx by the drain, so the last Goodbyes
	// still go out after an interrupt.
	serve, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.serve = serve
	if d.Watch != nil {
		d.obs = newObserver(d.Watch)
	}
	d.conns = map[string]*peerConn{}
	d.inbox = make(chan inbound, 256)
	d.accepted, d.acceptErr = make(chan transport.Conn), make(chan error, 1)
	d.ended = make(chan *peerConn)
	go d.accept()

	ticker := time.NewTicker(d.Tick)
	defer ticker.Stop()
	interrupted := ctx.Done()
	for !d.flush() {
		select {
		case c := <-d.accepted:
			d.admit(c)
		case p := <-d.ended:
			d.unpend(p)
		case in := <-d.inbox:
			d.receive(in)
		case <-ticker.C:
			d.tick(time.Now())
		case err := <-d.acceptErr:
			return fmt.Errorf("hub: accept: %w", err)
		case <-interrupted:
			interrupted = nil
			d.log.Info("interrupted: saying goodbye to every worker")
			d.Core.Stop("the hub was stopped")
		}
	}
	d.drain()
	if d.failed != nil {
		return d.failed
	}
	return ctx.Err()
}

// accept runs on a goroutine of its own: it hands every connection the
// Listener accepts to Run's goroutine (d.accepted), and the Listener's
// error, which ends the run, to d.acceptErr. A connection accepted once
// the serving context is done is closed here.
func (d *Driver) accept() {
	for {
		c, err := d.Listener.Accept(d.serve)
		if err != nil {
			d.acceptErr <- err
			return
		}
		select {
		case d.accepted <- c:
		case <-d.serve.Done():
			c.Close()
			return
		}
	}
}

// admit takes a new connection on Run's goroutine: one beyond MaxPending
// unregistered connections is closed at once; otherwise it gets a queue of
// QueueLen messages, a reader and a writer goroutine, and replaces an
// older connection of the same peer id (whose queue is closed: its writer
// finishes what was queued). The core hears of it only through its
// Register.
func (d *Driver) admit(c transport.Conn) {
	if d.pending >= d.rules.MaxPending {
		d.log.Warn("connection closed: too many connections that have not registered",
			"peer", c.RemotePeer(), "max", d.rules.MaxPending)
		c.Close()
		return
	}
	p := &peerConn{id: c.RemotePeer(), conn: c, out: make(chan wire.Message, d.rules.QueueLen),
		done: make(chan struct{}), read: make(chan struct{}), pending: true, since: time.Now()}
	d.pending++
	if old := d.conns[p.id]; old != nil {
		// The same identity again: the new connection replaces the old.
		delete(d.conns, p.id)
		old.gone = true
		close(old.out)
	}
	d.conns[p.id] = p
	d.log.Info("connection", "peer", p.id)
	go p.write(d.serve, d.rules.DrainTimeout, d.log)
	go p.readInto(d.serve, d.inbox)
	go func() {
		<-p.done
		<-p.read
		select {
		case d.ended <- p:
		case <-d.serve.Done():
		}
	}()
}

// receive hands one input from a peer's reader to the core, on Run's
// goroutine. Input from a connection already replaced or closed is
// dropped. A frame the hub could not read ends the connection: one that
// breaks the protocol with a Reject saying why (rejectFor), and the core
// forgets the peer. A message goes to OnStep, then (a push's transport
// time) to ObserveComm and to Step; one the core refused is logged and
// changes nothing here, one it accepted is seen by the observer, and a
// Register ends the connection's pending state, a Goodbye the connection.
func (d *Driver) receive(in inbound) {
	if in.c.gone || d.conns[in.c.id] != in.c {
		return
	}
	if in.err != nil {
		if r := rejectFor(in.err); r != nil {
			// Tell the peer why before hanging up: the writer delivers
			// the Reject, then closes (its reader is done).
			select {
			case in.c.out <- r:
			default:
			}
			if d.conns[in.c.id] == in.c {
				d.Core.Leave(in.c.id)
			}
			d.retire(in.c)
			d.log.Warn("refused a frame", "peer", in.c.id, "err", in.err)
			return
		}
		d.closeConn(in.c, in.err.Error())
		return
	}
	if d.OnStep != nil {
		d.OnStep(in.c.id, in.msg)
	}
	if _, ok := in.msg.(*wire.Push); ok && in.span > 0 {
		// What the push cost on the network: parking weighs it.
		d.Core.ObserveComm(in.c.id, in.span.Nanoseconds())
	}
	if err := d.Core.Step(in.c.id, in.msg); err != nil {
		d.log.Warn("refused", "peer", in.c.id, "kind", in.msg.Kind().String(), "err", err)
		return
	}
	if d.obs != nil {
		d.obs.step(in.c.id, in.msg, in.span)
	}
	switch in.msg.(type) {
	case *wire.Register:
		d.unpend(in.c)
	case *wire.Goodbye:
		// The worker left (the core forgot it): nothing more goes to it,
		// and it sends nothing after its Goodbye. Closing at once tells
		// the worker, which waits for that before it closes its end
		// (worker.Driver), that the Goodbye arrived; a worker that closed
		// first could reset the connection under a Goodbye not yet read.
		// (closeConn's Leave finds the peer already forgotten.)
		d.closeConn(in.c, "the worker left")
	}
}

// tick counts one period for the core (Core.Tick) and closes every
// connection that has not registered within RegisterTimeout of now.
func (d *Driver) tick(now time.Time) {
	d.Core.Tick()
	for _, p := range d.conns {
		if p.pending && now.Sub(p.since) > d.rules.RegisterTimeout {
			d.closeConn(p, fmt.Sprintf("no registration within %v", d.rules.RegisterTimeout))
		}
	}
}

// flush handles the core's Ready after an input, on Run's goroutine, and
// reports whether the run is over: the step it asks for is taken first
// (ApplyPending: a step that fails ends the run with d.failed), then each
// message is queued to its peer's writer without waiting (a peer gone
// since is skipped, the core learns it through Leave; a peer whose queue is
// full is disconnected; a Reject's connection is retired after it), the
// events are logged and observed, OnReady sees the Ready, and Advance
// acknowledges it. A stop requested meanwhile (RequestStop) is handed to
// the core and its Ready flushed too.
func (d *Driver) flush() bool {
	if err := ApplyPending(d.Core, d.Trainer); err != nil {
		d.failed = err
		return true
	}
	rd := d.Core.Ready()
	// The observer's clock is read before the messages are queued: a
	// worker may receive them, compute and push while this goroutine is
	// still here (logging, or descheduled on a loaded machine), and its
	// cycle must not start after the Merged it answers was sent.
	var at time.Time
	if d.obs != nil {
		at = d.obs.now()
	}
	for _, env := range rd.Messages {
		p := d.conns[env.To]
		if p == nil {
			continue // gone since: the core learns it through Leave
		}
		select {
		case p.out <- env.Msg:
			if _, ok := env.Msg.(*wire.Reject); ok {
				d.retire(p)
			}
		default:
			d.closeConn(p, fmt.Sprintf("outgoing queue of %d messages full", d.rules.QueueLen))
		}
	}
	for _, e := range rd.Events {
		logEvent(d.log, e)
	}
	if d.obs != nil {
		d.obs.ready(rd, at)
	}
	if d.OnReady != nil {
		d.OnReady(rd)
	}
	d.Core.Advance()
	if d.stop != "" && !rd.Done {
		d.Core.Stop(d.stop)
		d.stop = ""
		return d.flush()
	}
	return rd.Done
}

// unpend ends p's pending state (it registered, or its goroutines ended).
func (d *Driver) unpend(p *peerConn) {
	if p.pending {
		p.pending = false
		d.pending--
	}
}

// retire stops a connection the core refused: its queue (the Reject) is
// still delivered, then the writer closes it.
func (d *Driver) retire(p *peerConn) {
	if p.gone {
		return
	}
	p.gone = true
	close(p.out)
	if d.conns[p.id] == p {
		delete(d.conns, p.id)
	}
	// A refused worker is someone's mistake to fix (other classes, a full
	// run, not allowed): a warning, not news.
	d.log.Warn("connection refused", "peer", p.id)
}

// closeConn ends a connection at once (an error, or a stalled peer:
// nothing more to deliver), and tells the core the peer left if it was
// the peer's live connection.
func (d *Driver) closeConn(p *peerConn, why string) {
	if p.gone {
		return
	}
	p.gone = true
	close(p.out)
	p.conn.Close()
	if d.conns[p.id] == p {
		delete(d.conns, p.id)
		d.Core.Leave(p.id)
	}
	d.log.Info("connection closed", "peer", p.id, "why", why)
}

// drain ends a run that is done: every queue is closed and the writers
// deliver what is queued (the Goodbyes), each within DrainTimeout in all.
func (d *Driver) drain() {
	deadline := time.After(d.rules.DrainTimeout)
	for _, p := range d.conns {
		if !p.gone {
			p.gone = true
			close(p.out)
		}
	}
	for _, p := range d.conns {
		select {
		case <-p.done:
		case <-deadline:
			d.log.Warn("goodbye not delivered in time", "peer", p.id)
		}
	}
}

// rejectFor returns the Reject that tells a peer why its connection ends
// after a frame the hub could not read: another protocol version, or a
// frame that breaks the protocol (malformed, too large, an unknown kind,
// a lying length). Other errors (the connection dropped) get none.
func rejectFor(err error) *wire.Reject {
	switch {
	case errors.Is(err, wire.ErrVersion):
		return &wire.Reject{Code: wire.CodeVersion, Message: fmt.Sprintf(
			"this hub speaks cotrain protocol version %d: %v", wire.ProtocolVersion, err)}
	case errors.Is(err, wire.ErrMalformed), errors.Is(err, wire.ErrTooLarge),
		errors.Is(err, wire.ErrUnknownKind), errors.Is(err, wire.ErrLength):
		return &wire.Reject{Code: wire.CodeProtocol, Message: fmt.Sprintf("the hub could not read your message: %v", err)}
	}
	return nil
}

// readInto runs on a goroutine of its own: it hands every message of p's
// connection to the inbox, then the error that ended it, and closes p.read.
// It holds at most one message while the inbox is full.
func (p *peerConn) readInto(ctx context.Context, inbox chan<- inbound) {
	defer close(p.read)
	for {
		m, err := p.conn.Recv(ctx)
		var span time.Duration
		if sp, ok := p.conn.(transport.Spanned); ok && err == nil {
			span = sp.RecvSpan()
		}
		select {
		case inbox <- inbound{c: p, msg: m, err: err, span: span}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// write runs on a goroutine of its own: it sends p's queue in order. When
// the queue is closed it waits for the peer to close its end (a worker
// closes after reading its Goodbye) or for linger to pass, then closes the
// connection: closing at once could drop the last frames. A send that
// fails ends it; the rest of the queue is drained unsent, so that Run's
// goroutine never blocks on it. It closes p.done.
func (p *peerConn) write(ctx context.Context, linger time.Duration, log *slog.Logger) {
	defer close(p.done)
	defer p.conn.Close()
	for m := range p.out {
		if err := p.conn.Send(ctx, m); err != nil {
			log.Info("send failed", "peer", p.id, "kind", m.Kind().String(), "err", err)
			for range p.out { // drain so the driver never blocks on us
			}
			return
		}
	}
	select {
	case <-p.read:
	case <-time.After(linger):
	}
}

func logEvent(log *slog.Logger, e Event) {
	attrs := []any{"iteration", e.Iteration}
	if e.Peer != "" {
		attrs = append(attrs, "peer", e.Peer)
	}
	switch e.Kind {
	case EventMerged:
		attrs = append(attrs, "workers", e.Workers, "samples", e.Samples, "loss", e.Loss, "lr", e.LR)
		log.Debug(e.Kind.String(), attrs...)
		return
	case EventRefused:
		attrs = append(attrs, "err", e.Err)
		log.Warn(e.Kind.String(), attrs...)
		return
	}
	if e.Text != "" {
		attrs = append(attrs, "text", e.Text)
	}
	if e.Workers > 0 {
		attrs = append(attrs, "workers", e.Workers)
	}
	log.Info(e.Kind.String(), attrs...)
}
