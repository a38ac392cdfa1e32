// Package transport is the seam between cotrain's hub and worker drivers
// and the network: a connection carries wire messages to one peer.
//
// Two implementations live here: MemNetwork, an in-memory network for the
// drivers' tests, which still encodes and decodes every message through the
// wire codec; and NewStreamConn, which frames messages over any byte stream
// (a net.Conn, a libp2p stream). The libp2p transport is a thin adapter over
// NewStreamConn. The simulator (sim/) uses neither: it drives the hub and
// worker cores directly on its virtual clock and hands their messages over
// as copies (sim/link.go), some of them checked through the codec.
//
// # The caller's duties
//
//  1. Run one goroutine that calls Recv in a loop, and send from any
//     goroutine: Send and Recv may run concurrently, and concurrent Sends
//     are serialised.
//  2. Treat a message as handed over once Send returns: the transport
//     encodes it before returning, so the caller may change it afterwards.
//  3. Treat any error from Send or Recv other than a context error from a
//     Recv as the end of the connection, and Close it. Recv returns io.EOF
//     once the peer has closed and every message it sent has been received.
//  4. Check what arrives: Header.Sender against RemotePeer, vector lengths
//     against the model (wire.Floats.CheckLen). The transport checks only
//     the frame format.
//  5. Close every Conn and Listener: Close is what frees their goroutines.
package transport

import (
	"context"
	"errors"
	"time"

	"github.com/cotrain/cotrain/sync/wire"
)

// Conn is a connection to one peer, carrying whole messages.
type Conn interface {
	// Send encodes m and hands it to the connection. It blocks while the
	// connection's buffer is full (back-pressure from a slow peer) until
	// there is room, ctx is done, or either side closes. It returns
	// ErrClosed after Close, ErrPeerClosed (or the stream's error) when the
	// peer has gone.
	Send(ctx context.Context, m wire.Message) error
	// Recv returns the next message. It blocks until one arrives or ctx is
	// done (then it returns ctx's error and the connection stays usable),
	// returns io.EOF after the peer closed and its messages were drained,
	// ErrClosed after Close, and a wire error if the peer sent a bad frame.
	Recv(ctx context.Context) (wire.Message, error)
	// RemotePeer identifies the peer: a libp2p peer id, or the name given to
	// the in-memory network.
	RemotePeer() string
	// Close ends the connection in both directions and unblocks pending
	// Send and Recv calls. Messages not yet received by the peer may be
	// lost. Calling it again does nothing and returns nil.
	Close() error
}

// Spanned is implemented by connections that time what they receive: how
// long the message the last Recv returned took to arrive, from its frame's
// first byte to its last — the time it occupied the network, as far as the
// receiver can tell. It is an estimate: a frame that arrived while the
// receiver was busy elsewhere is read from the buffers at once and spans
// about zero, and so does a frame that fits in one packet. The hub uses it
// to weigh what a worker's pushes cost (hub.Core.ObserveComm). Only the
// goroutine that calls Recv may call RecvSpan.
type Spanned interface {
	RecvSpan() time.Duration
}

// Listener accepts connections.
type Listener interface {
	// Accept waits for the next connection, until ctx is done or the
	// listener is closed (then ErrClosed).
	Accept(ctx context.Context) (Conn, error)
	// Addr is the address peers dial.
	Addr() string
	// Close stops listening; connections already accepted stay open.
	Close() error
}

// Dialer opens connections.
type Dialer interface {
	// Dial connects to the listener at addr, until ctx is done.
	Dial(ctx context.Context, addr string) (Conn, error)
}

// Errors. Operations wrap them with %w and the peer or address concerned.
var (
	// ErrClosed: the connection or listener was closed on this side.
	ErrClosed = errors.New("transport: closed")
	// ErrPeerClosed: Send found the peer had closed its end.
	ErrPeerClosed = errors.New("transport: peer closed the connection")
	// ErrRefused: nothing listens at the address dialled.
	ErrRefused = errors.New("transport: connection refused")
	// ErrAddrInUse: Listen on an address that is already taken.
	ErrAddrInUse = errors.New("transport: address in use")
	// ErrQueueFull: Send on an in-memory connection configured not to
	// block found its queue full.
	ErrQueueFull = errors.New("transport: send queue full")
)
