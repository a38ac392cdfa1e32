package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"
)

// Dial connects to the host at addr, a multiaddr ending in /p2p/<peer id>
// (one of the hub's Addrs, or one found by sync/discovery), and opens a
// ProtocolID stream. The connection is authenticated: RemotePeer is the
// peer id the security handshake proved, which is the one in addr.
//
// Errors wrap ErrAddr (addr unusable), ErrConnect (no connection, or the
// handshake failed: a PSK mismatch ends here) or ErrProtocol (the peer does
// not serve ProtocolID); ErrConnect and ErrProtocol also wrap
// transport.ErrRefused.
func (h *Host) Dial(ctx context.Context, addr string) (transport.Conn, error) {
	return h.DialAny(ctx, []string{addr})
}

// DialAny is Dial given every address of one peer, such as all the
// addresses a hub advertises over mDNS: libp2p dials the whole set (in its
// own order, QUIC and TCP, several at once) and keeps the first connection
// that completes, so an address that is unreachable from here (another
// host's loopback, a second network the hub is on) costs nothing but its
// own failed dial. Every address must end in the same /p2p/<peer id>; one
// that does not parse is skipped (and logged) when another one does.
//
// Errors are Dial's; an ErrConnect names every address tried.
func (h *Host) DialAny(ctx context.Context, addrs []string) (transport.Conn, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no address to dial", ErrAddr)
	}
	// An address this host cannot parse (a transport a newer hub knows, a
	// garbled mDNS record) is skipped with a warning while another one is
	// usable: it must not keep the worker from the addresses that are.
	var info peer.AddrInfo
	var first string // the first usable address, for the one-peer check
	var bad error
	for _, a := range addrs {
		one, err := parsePeerAddr(a)
		if err != nil {
			if bad == nil {
				bad = err
			}
			continue
		}
		if first != "" && one.ID != info.ID {
			return nil, fmt.Errorf("%w: %q names peer %s, %q names %s: the addresses must be one peer's", ErrAddr, first, info.ID, a, one.ID)
		}
		if first == "" {
			first = a
		}
		info.ID = one.ID
		for _, m := range one.Addrs {
			if !slices.ContainsFunc(info.Addrs, m.Equal) {
				info.Addrs = append(info.Addrs, m)
			}
		}
	}
	if first == "" {
		return nil, bad
	}
	if bad != nil {
		h.log.Warn("p2p: skipping an address that does not parse", "err", bad)
	}
	addr := strings.Join(addrs, " or ")
	if info.ID == h.h.ID() {
		return nil, fmt.Errorf("%w: %q is this host itself", ErrAddr, addr)
	}
	if err := h.h.Connect(ctx, info); err != nil {
		return nil, &dialError{ErrConnect, addr, connectHint(err, h.private), err}
	}
	s, err := h.openStream(ctx, info.ID)
	if err != nil {
		if errors.Is(err, msmux.ErrNotSupported[protocol.ID]{}) {
			return nil, &dialError{ErrProtocol, addr, "is a hub running there, and listening?", err}
		}
		return nil, fmt.Errorf("p2p: opening a %s stream to %s: %w", ProtocolID, addr, err)
	}
	h.log.Debug("p2p: dialed", "remote", info.ID.String(), "addr", s.Conn().RemoteMultiaddr().String())
	return newConn(s, h.maxFrame), nil
}

// connectHint guesses, for a person, why a connection failed. libp2p does
// not type these errors, so the guess reads their text; it only words the
// hint and never decides anything.
func connectHint(err error, private bool) string {
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || strings.Contains(msg, "too many open files"):
		return "this process is out of file descriptors (too many open files): raise ulimit -n or close what holds them; the key is not the cause"
	case strings.Contains(msg, "peer id mismatch"):
		return "another peer answers at that address: is the /p2p/ id current?"
	case strings.Contains(msg, "negotiate security protocol"):
		return "the handshake failed: do both sides hold the same swarm key (PSK), or both none? " +
			"(a peer out of file descriptors drops handshakes too: its log says \"too many open files\")"
	case private:
		return "is the peer up, and does it hold the same swarm key (PSK)?"
	}
	return "is the peer up and reachable?"
}

// dialError is a failed Dial: it reads "p2p: cannot connect to <addr>
// (<hint>): <cause>" and wraps its sentinel, transport.ErrRefused (the
// seam's error for "nobody to talk to there") and the cause.
type dialError struct {
	sentinel   error
	addr, hint string
	cause      error
}

func (e *dialError) Error() string {
	return fmt.Sprintf("%v at %s (%s): %v", e.sentinel, e.addr, e.hint, e.cause)
}

func (e *dialError) Unwrap() []error { return []error{e.sentinel, transport.ErrRefused, e.cause} }

// openStream opens a stream to p on the existing connection and negotiates
// ProtocolID before returning. libp2p's own NewStream negotiates lazily
// (with the first write) when identify says the peer serves the protocol,
// which would turn a hub that stopped listening into a failed first Send;
// negotiating here costs one round trip per Dial and makes Dial fail
// instead, and lets the hub's Accept see the stream at once.
func (h *Host) openStream(ctx context.Context, p peer.ID) (network.Stream, error) {
	s, err := h.h.Network().NewStream(network.WithNoDial(ctx, "connected just before"), p)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- msmux.SelectProtoOrFail(ProtocolID, s) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Reset() // unblocks the negotiation
		<-done
		err = ctx.Err()
	}
	if err == nil {
		err = s.SetProtocol(ProtocolID)
	}
	if err != nil {
		s.Reset()
		return nil, err
	}
	return s, nil
}

// Dialer returns h as a transport.Dialer.
func (h *Host) Dialer() transport.Dialer { return h }

var _ transport.Dialer = (*Host)(nil)

// Listen starts serving ProtocolID: every stream a peer opens becomes a
// Conn that Accept returns. A host has one listener at a time: Listen
// again replaces the previous one, which then accepts nothing more. After
// the host is closed, the listener's Accept returns transport.ErrClosed.
//
// Until Accept takes it, an incoming stream waits in a queue of
// AcceptBacklog; when the queue is full, new streams are reset, so a flood
// of peers cannot pile up goroutines behind a stalled hub.
func (h *Host) Listen() transport.Listener {
	l := &listener{
		h:      h,
		queue:  make(chan *conn, AcceptBacklog),
		closed: make(chan struct{}),
	}
	h.mu.Lock()
	prev, closed := h.listener, h.closed
	h.listener = l
	h.mu.Unlock()
	if prev != nil {
		prev.drop()
	}
	if closed {
		l.drop()
		return l
	}
	h.h.SetStreamHandler(ProtocolID, l.handle)
	return l
}

// AcceptBacklog is the number of incoming streams that may wait for Accept.
const AcceptBacklog = 64

// listener is Host.Listen's transport.Listener.
type listener struct {
	h      *Host
	queue  chan *conn
	once   sync.Once
	closed chan struct{}
}

var _ transport.Listener = (*listener)(nil)

// handle runs in libp2p's goroutine for each incoming stream.
func (l *listener) handle(s network.Stream) {
	select {
	case <-l.closed:
		s.Reset()
		return
	default:
	}
	// The Conn starts reading at once, so that a worker's first message
	// (a Register, or a whole gradient) is taken off the wire before the
	// hub gets to Accept.
	c := newConn(s, l.h.maxFrame)
	select {
	case l.queue <- c:
		select {
		case <-l.closed: // Close ran meanwhile and may have missed c
			l.drop()
		default:
		}
	default:
		l.h.log.Warn("p2p: accept queue full, resetting stream", "remote", s.Conn().RemotePeer().String())
		c.reset()
	}
}

// Accept implements transport.Listener.
func (l *listener) Accept(ctx context.Context) (transport.Conn, error) {
	select {
	case c := <-l.queue:
		return c, nil
	case <-l.closed:
		return nil, fmt.Errorf("p2p: accept: %w", transport.ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("p2p: accept: %w", ctx.Err())
	}
}

// Addr implements transport.Listener: the host's first address (see
// Host.Addrs for all of them).
func (l *listener) Addr() string {
	if a := l.h.Addrs(); len(a) > 0 {
		return a[0]
	}
	return ""
}

// Close implements transport.Listener: it stops serving ProtocolID and
// resets the streams still waiting for Accept. Accepted Conns stay open.
func (l *listener) Close() error {
	l.h.mu.Lock()
	current := l.h.listener == l
	if current {
		l.h.listener = nil
	}
	l.h.mu.Unlock()
	if current {
		l.h.h.RemoveStreamHandler(ProtocolID)
	}
	l.drop()
	return nil
}

// drop marks l closed and resets its queued streams.
func (l *listener) drop() {
	l.once.Do(func() { close(l.closed) })
	for {
		select {
		case c := <-l.queue:
			c.reset()
		default:
			return
		}
	}
}

// conn is a transport.Conn over one libp2p stream. transport.NewStreamConn
// does the framing and resets the stream on a bad frame; conn adds the
// rule that a Send that fails resets the stream too (the peer then sees an
// error rather than a clean end after a partial frame), and a "p2p: "
// prefix. Errors keep their sentinels (io.EOF bare, as the seam promises).
type conn struct {
	transport.Conn
	s network.Stream
}

// conn forwards transport.Spanned to the stream Conn it wraps: embedding an
// interface hides the methods of the value inside, and without the frame
// timings the hub's driver would have no communication figures for parking
// (hub.Core.ObserveComm) or the dashboard's push time in real runs.
var _ transport.Spanned = (*conn)(nil)

// RecvSpan implements transport.Spanned.
func (c *conn) RecvSpan() time.Duration {
	if sp, ok := c.Conn.(transport.Spanned); ok {
		return sp.RecvSpan()
	}
	return 0
}

func newConn(s network.Stream, maxFrame int) *conn {
	remote := s.Conn().RemotePeer().String()
	return &conn{Conn: transport.NewStreamConn(s, remote, maxFrame), s: s}
}

// reset aborts the stream and frees the Conn's reader.
func (c *conn) reset() {
	c.s.Reset()
	c.Conn.Close()
}

// Send implements transport.Conn.
func (c *conn) Send(ctx context.Context, m wire.Message) error {
	if err := c.Conn.Send(ctx, m); err != nil {
		if !errors.Is(err, transport.ErrClosed) {
			c.reset()
		}
		return fmt.Errorf("p2p: %w", err)
	}
	return nil
}

// Recv implements transport.Conn.
func (c *conn) Recv(ctx context.Context) (wire.Message, error) {
	m, err := c.Conn.Recv(ctx)
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		return nil, fmt.Errorf("p2p: %w", err)
	}
	return m, nil
}
