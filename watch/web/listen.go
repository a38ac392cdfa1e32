package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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

// Serve starts Handler(r) on addr and returns its URL and a function that
// stops it. The server is read-only; nothing it does reaches the driver
// (the Recorder sits behind the Bus). A listener on every interface is
// shown with its wildcard address, which browsers do not open: the docs and
// the log say to use the machine's LAN address. Errors of the server after
// it started go to log.
func Serve(r *watch.Recorder, addr string, log *slog.Logger) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	srv := &http.Server{Handler: Handler(r), ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("dashboard server", "err", err)
		}
	}()
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }, nil
}
