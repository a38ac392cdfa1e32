package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/cotrain/cotrain/watch"
)

// CheckAddr refuses a --http value that is not HOST:PORT; empty (off) is
// accepted. cmd/hub and cmd/worker call it while parsing their flags, so
// that a bad value is a usage error before any work.
func CheckAddr(addr string) error {
	if addr == "" {
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("--http %q: want HOST:PORT, such as 127.0.0.1:8080 (this machine only) or :8080 (every network it is on)", addr)
	}
	return nil
}

// The dashboard server's limits. A connection that sends no request line
// and headers within ReadHeaderTimeout, or no whole request within
// ReadTimeout, is closed, and so is a keep-alive connection idle for
// IdleTimeout; every response but the event stream must be written within
// WriteTimeout (the stream bounds each of its writes instead). At most
// MaxConns connections are open at once: the next waits in the kernel's
// backlog, holding no descriptor of this process, so idle or slow clients
// (slowloris) cannot take the descriptors a hub needs for its workers.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	IdleTimeout       = 30 * time.Second
	MaxConns          = 2 * watch.MaxSubscribers
)

// serverLimits are the limits above, as values (tests shorten them).
type serverLimits struct {
	readHeader, read, idle, write time.Duration
	conns                         int
}

// Serve starts Handler(r) on addr and returns its URL and a function that
// stops it. The server is read-only; nothing it does reaches the driver
// (the Recorder sits behind the Bus). A listener on every interface is
// shown with its wildcard address, which browsers do not open: the docs and
// the log say to use the machine's LAN address. Errors of the server after
// it started go to log; running out of file descriptors is logged as that,
// at warning level.
func Serve(r *watch.Recorder, addr string, log *slog.Logger) (url string, stop func(), err error) {
	return serve(r, addr, log, serverLimits{ReadHeaderTimeout, ReadTimeout, IdleTimeout, WriteTimeout, MaxConns})
}

func serve(r *watch.Recorder, addr string, log *slog.Logger, lim serverLimits) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	srv := &http.Server{Handler: bounded(Handler(r), lim.write), ReadHeaderTimeout: lim.readHeader,
		ReadTimeout: lim.read, IdleTimeout: lim.idle,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	lln := &limitListener{Listener: ln, slots: make(chan struct{}, lim.conns), done: make(chan struct{}), log: log}
	go func() {
		if err := srv.Serve(lln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("dashboard server", "err", err)
		}
	}()
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }, nil
}

// bounded sets a write deadline of d on every response but the event
// stream's (http.Server.WriteTimeout would cut the stream too; the stream
// bounds each of its writes instead). The server's ReadTimeout does not
// end a stream: it bounds the reading of the request, and a stream's
// request has been read (TestRefusedStreamClosed).
func bounded(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/api/events" {
			http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, req)
	})
}

// limitListener accepts at most cap(slots) connections at once (as
// golang.org/x/net/netutil.LimitListener), and logs an Accept that fails
// for want of file descriptors as what it is.
type limitListener struct {
	net.Listener
	slots   chan struct{}
	log     *slog.Logger
	lastFD  time.Time // the last descriptor warning (one a minute at most); Accept's alone
	done    chan struct{}
	closing sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			if now := time.Now(); now.Sub(l.lastFD) > time.Minute {
				l.lastFD = now
				l.log.Warn("dashboard: out of file descriptors (too many open files): this process holds as many as ulimit -n allows; raise it, or find what holds them",
					"dashboard_connections", len(l.slots), "err", err)
			}
		}
		return nil, err
	}
	return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closing.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// slotConn gives its slot back when closed, once.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
