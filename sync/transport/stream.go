package transport

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cotrain/cotrain/sync/wire"
)

// resetter is a stream that can be aborted rather than closed (a libp2p
// stream): the peer then sees an error, not a clean end.
type resetter interface{ Reset() error }

// streamConn frames messages over a byte stream.
type streamConn struct {
	rw     io.ReadWriteCloser
	remote string

	sendMu sync.Mutex // serialises Sends: guards w
	w      *wire.Writer

	// The reader goroutine decodes frames into msgs (one ahead of Recv,
	// so the stream's flow control holds back a fast sender) and, when the
	// stream ends or errs, sets readErr and closes readDone.
	msgs     chan timed
	readDone chan struct{}
	readErr  error
	span     time.Duration // of the message Recv returned last (Spanned)

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// timed is a message and how long its frame took to arrive.
type timed struct {
	m    wire.Message
	span time.Duration
}

// firstByte is a reader that notes when a read first returned bytes since
// it was armed: when a frame began to arrive, if the reader was waiting.
type firstByte struct {
	r     io.Reader
	first time.Time
}

func (f *firstByte) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && f.first.IsZero() {
		f.first = time.Now()
	}
	return n, err
}

// NewStreamConn returns a Conn that frames messages over rw with the wire
// codec, refusing incoming frames over maxFrame bytes. remote is the peer's
// identity as the stream's owner authenticated it. The Conn owns rw: its
// Close closes rw, and rw's Close must unblock a pending Read.
//
// It starts a goroutine that reads ahead one message; Close ends it. If the
// peer sends a bad frame, rw is reset (when it has a Reset method, like a
// libp2p stream) and Recv returns the wire error. If ctx is done while Send
// is blocked writing, the Conn is closed (reset), because a frame cut short
// would leave the peer reading garbage; Send returns ctx's error.
func NewStreamConn(rw io.ReadWriteCloser, remote string, maxFrame int) Conn {
	c := &streamConn{
		rw:       rw,
		remote:   remote,
		w:        wire.NewWriter(rw),
		msgs:     make(chan timed, 1),
		readDone: make(chan struct{}),
		closed:   make(chan struct{}),
	}
	fb := &firstByte{r: rw}
	go c.readLoop(wire.NewReader(fb, maxFrame), fb)
	return c
}

var (
	_ Conn    = (*streamConn)(nil)
	_ Spanned = (*streamConn)(nil)
)

func (c *streamConn) readLoop(r *wire.Reader, fb *firstByte) {
	defer close(c.readDone)
	for {
		fb.first = time.Time{}
		m, err := r.ReadMessage(nil)
		span := time.Since(fb.first)
		if err != nil {
			if err != io.EOF && !c.isClosed() {
				c.reset() // a bad frame or a broken stream: abort it
			}
			c.readErr = err
			return
		}
		select {
		case c.msgs <- timed{m, span}:
		case <-c.closed:
			return
		}
	}
}

// Send implements Conn.
func (c *streamConn) Send(ctx context.Context, m wire.Message) error {
	if c.isClosed() {
		return fmt.Errorf("transport: send to %q: %w", c.remote, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("transport: send to %q: %w", c.remote, err)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	stop := context.AfterFunc(ctx, func() { c.abort() })
	err := c.w.WriteMessage(m)
	if !stop() && err != nil { // ctx fired during the write and broke it
		return fmt.Errorf("transport: send to %q: %w (the connection was reset: %w)", c.remote, ctx.Err(), err)
	}
	if err != nil {
		if c.isClosed() {
			return fmt.Errorf("transport: send to %q: %w", c.remote, ErrClosed)
		}
		return fmt.Errorf("transport: send to %q: %w", c.remote, err)
	}
	return nil
}

// Recv implements Conn.
func (c *streamConn) Recv(ctx context.Context) (wire.Message, error) {
	if c.isClosed() {
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, err)
	}
	select {
	case t := <-c.msgs:
		c.span = t.span
		return t.m, nil
	case <-c.closed:
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, ctx.Err())
	case <-c.readDone:
		// The reader stopped; the message it read last may still wait.
		select {
		case t := <-c.msgs:
			c.span = t.span
			return t.m, nil
		default:
		}
		switch {
		case c.readErr == io.EOF:
			return nil, io.EOF
		case c.isClosed(), c.readErr == nil:
			return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, ErrClosed)
		}
		return nil, fmt.Errorf("transport: recv from %q: %w", c.remote, c.readErr)
	}
}

// RecvSpan implements Spanned.
func (c *streamConn) RecvSpan() time.Duration { return c.span }

// RemotePeer implements Conn.
func (c *streamConn) RemotePeer() string { return c.remote }

// Close implements Conn; it returns the stream's Close error, once.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = c.rw.Close()
	})
	return c.closeErr
}

// abort closes the connection, resetting the stream if it can be reset.
func (c *streamConn) abort() {
	c.reset()
	c.Close()
}

// reset resets the stream if it can be, so that the peer sees an error.
func (c *streamConn) reset() {
	if r, ok := c.rw.(resetter); ok {
		r.Reset()
	}
}

func (c *streamConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}
