package web

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/watch"
)

// startLimited serves a recorder with short limits and returns its host:port.
func startLimited(t *testing.T, lim serverLimits) (string, *watch.Recorder) {
	t.Helper()
	r := watch.NewRecorder("hub", &watch.Bus{})
	url, stop, err := serve(r, "127.0.0.1:0", slog.New(slog.DiscardHandler), lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"), r
}

// closedWithin reports whether the server closes c within d (a read that
// ends in EOF or a reset, not in our own deadline).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestServerTimeouts: issue 28's idle keep-alive connections (300 stayed
// open past 45 s) and slowloris clients are closed by the server.
func TestServerTimeouts(t *testing.T) {
	lim := serverLimits{readHeader: 200 * time.Millisecond, read: 300 * time.Millisecond, idle: 300 * time.Millisecond,
		write: time.Second, conns: 8}
	addr, _ := startLimited(t, lim)
	// Nothing sent: closed after the header timeout.
	if c := dial(t, addr); !closedWithin(c, 3*time.Second) {
		t.Error("a silent connection stayed open")
	}
	// Half a request line, then silence (slowloris).
	c := dial(t, addr)
	io.WriteString(c, "GET /api/status HTTP/1.1\r\nHost: x\r\n")
	if !closedWithin(c, 3*time.Second) {
		t.Error("a connection that never finished its headers stayed open")
	}
	// A keep-alive connection after its answer: closed once idle.
	c = dial(t, addr)
	io.WriteString(c, "GET /api/status HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("status: %v %v", res, err)
	}
	io.Copy(io.Discard, res.Body)
	if !closedWithin(c, 3*time.Second) {
		t.Error("an idle keep-alive connection stayed open")
	}
}

// TestServerConnectionCap: past the cap, a connection is not accepted (it
// waits in the backlog, holding no descriptor of the server) until one of
// the others closes.
func TestServerConnectionCap(t *testing.T) {
	lim := serverLimits{readHeader: 5 * time.Second, read: 5 * time.Second, idle: 5 * time.Second, write: time.Second, conns: 4}
	addr, _ := startLimited(t, lim)
	var open []net.Conn
	for range 4 {
		open = append(open, dial(t, addr))
	}
	extra := dial(t, addr)
	io.WriteString(extra, "GET /api/status HTTP/1.1\r\nHost: x\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := extra.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Fatalf("the fifth connection was served: %d bytes, %v", n, err)
	}
	open[0].Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("after one closed, the fifth: %v %v", res, err)
	}
}

// TestRefusedStreamClosed: a client refused an event stream (503, all
// watch.MaxSubscribers open) is told Connection: close and its connection
// closes, instead of staying open by keep-alive. Streams outlive the read
// timeout.
func TestRefusedStreamClosed(t *testing.T) {
	lim := serverLimits{readHeader: time.Second, read: 200 * time.Millisecond, idle: 5 * time.Second, write: time.Second,
		conns: watch.MaxSubscribers + 4}
	addr, r := startLimited(t, lim)
	for range watch.MaxSubscribers {
		c := dial(t, addr)
		io.WriteString(c, "GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	for deadline := time.Now().Add(10 * time.Second); r.Status().Clients < watch.MaxSubscribers; {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open", r.Status().Clients)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := dial(t, addr)
	io.WriteString(c, "GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != http.StatusServiceUnavailable || !res.Close {
		t.Fatalf("the stream past the limit: %v %v, want a 503 that closes", res, err)
	}
	io.Copy(io.Discard, res.Body)
	if !closedWithin(c, 3*time.Second) {
		t.Error("the refused client's connection stayed open")
	}
	// The streams outlived the 200 ms read timeout.
	time.Sleep(400 * time.Millisecond)
	if n := r.Status().Clients; n != watch.MaxSubscribers {
		t.Errorf("%d streams open after the read timeout, want %d", n, watch.MaxSubscribers)
	}
}
