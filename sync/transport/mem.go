package transport

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/cotrain/cotrain/sync/wire"
)

// MemConfig configures a MemNetwork.
type MemConfig struct {
	// QueueLen is how many messages each direction of a connection holds
	// before Send blocks (or fails, see FailWhenFull); it is also the
	// number of dialled connections a listener holds before Accept.
	QueueLen int
	// MaxFrame is the receiver's frame cap, as a real transport would have;
	// a larger message fails at Recv with wire.ErrTooLarge.
	MaxFrame int
	// FailWhenFull makes Send return ErrQueueFull at once instead of
	// blocking when the queue is full: for a single-threaded caller, which
	// cannot block.
	FailWhenFull bool
}

// DefaultMemConfig returns a queue of 16 messages and a 64 MiB frame cap.
func DefaultMemConfig() MemConfig {
	return MemConfig{QueueLen: 16, MaxFrame: 64 << 20}
}

// Validate reports a configuration that cannot work.
func (c MemConfig) Validate() error {
	if c.QueueLen < 1 {
		return fmt.Errorf("transport: memory queue length %d, want at least 1", c.QueueLen)
	}
	if c.MaxFrame < 1 {
		return fmt.Errorf("transport: memory frame cap %d, want at least 1", c.MaxFrame)
	}
	return nil
}

// MemNetwork is an in-memory network of named listeners. Every message sent
// over it is encoded to a frame and decoded on Recv through the wire codec,
// so tests of the drivers also exercise the codec, and a receiver never
// shares memory with the sender. It is safe for concurrent use.
type MemNetwork struct {
	cfg       MemConfig
	mu        sync.Mutex
	listeners map[string]*memListener
	anon      int // dialers without a name so far
}

// NewMemNetwork returns an empty network configured by cfg.
func NewMemNetwork(cfg MemConfig) (*MemNetwork, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &MemNetwork{cfg: cfg, listeners: map[string]*memListener{}}, nil
}

// Listen starts listening at addr, which must not be taken.
func (n *MemNetwork) Listen(addr string) (Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listeners[addr]; ok {
		return nil, fmt.Errorf("%w: %q", ErrAddrInUse, addr)
	}
	l := &memListener{net: n, addr: addr, backlog: make(chan *memConn, n.cfg.QueueLen), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// Dial connects to addr as an anonymous peer ("mem-1", "mem-2", ...).
func (n *MemNetwork) Dial(ctx context.Context, addr string) (Conn, error) {
	return n.dial(ctx, "", addr)
}

// Dialer returns a Dialer whose connections the listener sees as coming
// from the peer named from (its RemotePeer).
func (n *MemNetwork) Dialer(from string) Dialer { return memDialer{n, from} }

type memDialer struct {
	net  *MemNetwork
	from string
}

// Dial implements Dialer.
func (d memDialer) Dial(ctx context.Context, addr string) (Conn, error) {
	return d.net.dial(ctx, d.from, addr)
}

// dial connects from the peer named from ("": the next anonymous name).
func (n *MemNetwork) dial(ctx context.Context, from, addr string) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: dialling %q: %w", addr, err)
	}
	n.mu.Lock()
	l, ok := n.listeners[addr]
	if ok && from == "" {
		n.anon++
		from = fmt.Sprintf("mem-%d", n.anon)
	}
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: nothing listens at %q", ErrRefused, addr)
	}
	// Two one-way pipes; each end sends on one and receives on the other.
	ab, ba := n.newPipe(), n.newPipe()
	client := &memConn{cfg: n.cfg, remote: addr, in: ba, out: ab, closed: make(chan struct{})}
	server := &memConn{cfg: n.cfg, remote: from, in: ab, out: ba, closed: make(chan struct{})}
	ab.sender, ab.receiver = client.closed, server.closed
	ba.sender, ba.receiver = server.closed, client.closed
	select {
	case l.backlog <- server:
		// The listener may have closed as we queued, after its Close
		// emptied the backlog: then nobody will accept server.
		select {
		case <-l.done:
			server.Close()
			return nil, fmt.Errorf("%w: the listener at %q closed", ErrRefused, addr)
		default:
			return client, nil
		}
	case <-l.done:
		return nil, fmt.Errorf("%w: the listener at %q closed", ErrRefused, addr)
	case <-ctx.Done():
		return nil, fmt.Errorf("transport: dialling %q: %w", addr, ctx.Err())
	}
}

// pipe is one direction of a connection: a bounded queue of frames and
// the close signals of both ends.
type pipe struct {
	frames   chan []byte
	sender   chan struct{} // closed when the sending end closes
	receiver chan struct{} // closed when the receiving end closes
}

func (n *MemNetwork) newPipe() *pipe {
	return &pipe{frames: make(chan []byte, n.cfg.QueueLen)}
}

// memConn is one end of an in-memory connection.
type memConn struct {
	cfg    MemConfig
	remote string
	in     *pipe
	out    *pipe

	sendMu sync.Mutex // serialises Sends: guards enc and buf
	enc    *wire.Writer
	buf    bytes.Buffer

	recvMu sync.Mutex // serialises Recvs: guards reuse of the reader
	rd     *wire.Reader
	src    bytes.Reader

	closeOnce sync.Once
	closed    chan struct{} // closed by Close
}

var _ Conn = (*memConn)(nil)

// Send implements Conn. The message is encoded at once; the frame is queued.
func (c *memConn) Send(ctx context.Context, m wire.Message) error {
	if err := c.state(ctx); err != nil {
		return fmt.Errorf("transport: send to %q: %w", c.remote, err)
	}
	c.sendMu.Lock()
	if c.enc == nil {
		c.enc = wire.NewWriter(&c.buf)
	}
	c.buf.Reset()
	err := c.enc.WriteMessage(m)
	frame := bytes.Clone(c.buf.Bytes()) // the queue owns its own copy
	c.sendMu.Unlock()
	if err != nil {
		return fmt.Errorf("transport: send to %q: %w", c.remote, err)
	}
	if c.cfg.FailWhenFull {
		select {
		case c.out.frames <- frame:
			return nil
		default:
			return fmt.Errorf("transport: send to %q: %w (%d messages queued)", c.remote, ErrQueueFull, c.cfg.QueueLen)
		}
	}
	select {
	case c.out.frames <- frame:
		return nil
	case <-c.closed:
		return fmt.Errorf("transport: send to %q: %w", c.remote, ErrClosed)
	case <-c.out.receiver:
		return fmt.Errorf("transport: send to %q: %w", c.remote, ErrPeerClosed)
	case <-ctx.Done():
		return fmt.Errorf("transport: send to %q: %w", c.remote, ctx.Err())
	}
}

// state returns the error a Send must fail with before queueing anything:
// this end closed, the peer closed, or ctx done. Checking first keeps a
// Send on a dead connection from succeeding just because the queue had room.
func (c *memConn) state(ctx context.Context) error {
	select {
	case <-c.closed:
		return ErrClosed
	case <-c.out.receiver:
		return ErrPeerClosed
	default:
		return ctx.Err()
	}
}

// Recv implements Conn. Frames the peer queued before closing are still
// delivered; then io.EOF.
func (c *memConn) Recv(ctx context.Context) (wire.Message, error) {
	// Closing this end or cancelling ctx wins over a queued frame.
	select {
	case <-c.closed:
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, ErrClosed)
	default:
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, err)
		}
	}
	select {
	case frame := <-c.in.frames:
		return c.decode(frame)
	case <-c.closed:
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, ctx.Err())
	case <-c.in.sender:
		// The peer closed: drain what it sent before (its Sends returned
		// before its Close, so their frames are already queued).
		select {
		case frame := <-c.in.frames:
			return c.decode(frame)
		default:
			return nil, io.EOF
		}
	}
}

func (c *memConn) decode(frame []byte) (wire.Message, error) {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	if c.rd == nil {
		c.rd = wire.NewReader(&c.src, c.cfg.MaxFrame)
	}
	c.src.Reset(frame)
	m, err := c.rd.ReadMessage(nil)
	if err != nil {
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, err)
	}
	return m, nil
}

// RemotePeer implements Conn.
func (c *memConn) RemotePeer() string { return c.remote }

// Close implements Conn.
func (c *memConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// memListener is a MemNetwork's listener.
type memListener struct {
	net       *MemNetwork
	addr      string
	backlog   chan *memConn
	closeOnce sync.Once
	done      chan struct{}
}

var _ Listener = (*memListener)(nil)

// Accept implements Listener.
func (l *memListener) Accept(ctx context.Context) (Conn, error) {
	select {
	case <-l.done:
		return nil, fmt.Errorf("transport: accept at %q: %w", l.addr, ErrClosed)
	default:
	}
	select {
	case c := <-l.backlog:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("transport: accept at %q: %w", l.addr, ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("transport: accept at %q: %w", l.addr, ctx.Err())
	}
}

// Addr implements Listener.
func (l *memListener) Addr() string { return l.addr }

// Close implements Listener. It frees the address, and closes the
// connections dialled but not yet accepted, so their dialers see io.EOF.
func (l *memListener) Close() error {
	l.closeOnce.Do(func() {
		l.net.mu.Lock()
		delete(l.net.listeners, l.addr)
		l.net.mu.Unlock()
		close(l.done)
		for {
			select {
			case c := <-l.backlog:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}
