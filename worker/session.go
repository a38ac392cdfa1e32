package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

// Backoff is a reconnection schedule: the wait before retry k (from 0) is
// min(Min·2^k, Max), scaled by a random factor in [1−Jitter, 1] so that the
// workers of a hub that restarts do not all dial it in the same instant.
type Backoff struct {
	Min, Max time.Duration
	// Jitter is the fraction of each wait that is random, in [0, 1].
	Jitter float64
}

// DefaultBackoff waits 100 ms, doubling up to 5 s, with half of each wait
// random.
func DefaultBackoff() Backoff {
	return Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.5}
}

// Validate reports a schedule that cannot work.
func (b Backoff) Validate() error {
	if b.Min <= 0 || b.Max < b.Min || !(b.Jitter >= 0 && b.Jitter <= 1) {
		return fmt.Errorf("%w: backoff %v..%v with jitter %v: want 0 < Min <= Max and jitter in [0, 1]",
			ErrConfig, b.Min, b.Max, b.Jitter)
	}
	return nil
}

// Wait returns the wait before retry attempt (0 for the first), drawing
// the jitter from r.
func (b Backoff) Wait(attempt int, r *rand.Rand) time.Duration {
	w := b.Max
	if attempt < 30 && b.Min<<attempt < b.Max {
		w = b.Min << attempt
	}
	return time.Duration(float64(w) * (1 - float64(b.Jitter*r.Float64())))
}

// Session keeps one worker in a run across connections: it runs a Driver
// on each, and when a connection drops before the hub's Goodbye (the hub
// restarted, the Wi-Fi went away) it dials again with Backoff for up to
// ReconnectTimeout and registers afresh. A new Core per connection is the
// whole of the resynchronisation: the hub's Welcome carries the current
// weights, optimizer state and iteration, whatever this worker held before.
//
// Data and Backend are shared by the sessions; the Driver returns only once
// its compute is done, so they are never used twice at once.
type Session struct {
	// Config is each Core's config; Hub is set to each connection's
	// RemotePeer.
	Config  Config
	Backend gpu.Backend
	Data    Batches
	// Dial opens a connection to the hub. The first Dial is tried once: a
	// hub that is not there, or refuses the handshake (a wrong network
	// key), is an error at once.
	Dial func(ctx context.Context) (transport.Conn, error)
	// Backoff schedules the redials; ReconnectTimeout bounds them (0: never
	// reconnect): the DriverConfig fields of those names, whose NextDial
	// is the rule Run follows.
	Backoff          Backoff
	ReconnectTimeout time.Duration
	// Rand draws the backoff's jitter.
	Rand *rand.Rand
	Log  *slog.Logger
	// OnConnect, when set, is called with each new connection's number (0
	// for the first) before its Core registers.
	OnConnect func(n int)
	// OnReady, when set, sees every Ready of every connection's Core.
	OnReady func(*Core, Ready)
	// Slowdown is passed to each Driver (for tests).
	Slowdown float64
	// Battery and BatteryEvery are passed to each Driver; each Register
	// carries a fresh reading (none when it fails).
	Battery      func() (wire.Battery, error)
	BatteryEvery time.Duration

	core *Core
}

// Core returns the core of the latest connection (nil before the first).
func (s *Session) Core() *Core { return s.core }

// Run works until the hub says Goodbye (nil), refuses the worker, ctx ends,
// or the hub cannot be reached again within ReconnectTimeout (an error
// wrapping ErrHubGone).
func (s *Session) Run(ctx context.Context) error {
	if s.Dial == nil || s.Backend == nil || s.Data == nil {
		return fmt.Errorf("%w: a session needs Dial, Backend and Data", ErrConfig)
	}
	if s.ReconnectTimeout > 0 {
		if err := s.Backoff.Validate(); err != nil {
			return err
		}
		if s.Rand == nil {
			return fmt.Errorf("%w: a session that reconnects needs Rand", ErrConfig)
		}
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn, err := s.Dial(ctx)
	if err != nil {
		return err
	}
	for n := 0; ; n++ {
		cfg := s.Config
		cfg.Hub = conn.RemotePeer()
		if s.Battery != nil {
			if b, err := s.Battery(); err == nil {
				cfg.Battery = b
			} else {
				log.Debug("battery", "err", err)
			}
		}
		core, err := NewCore(cfg, s.Backend)
		if err != nil {
			conn.Close()
			return err
		}
		s.core = core
		if s.OnConnect != nil {
			s.OnConnect(n)
		}
		d := &Driver{Core: core, Conn: conn, Data: s.Data, Log: log, Slowdown: s.Slowdown,
			Battery: s.Battery, BatteryEvery: s.BatteryEvery}
		if s.OnReady != nil {
			d.OnReady = func(rd Ready) { s.OnReady(core, rd) }
		}
		err = d.Run(ctx)
		if !errors.Is(err, ErrHubGone) || s.ReconnectTimeout <= 0 || ctx.Err() != nil {
			return err
		}
		log.Warn("lost the hub; reconnecting", "err", err, "for", s.ReconnectTimeout)
		if conn, err = s.redial(ctx, err); err != nil {
			return err
		}
	}
}

// redial dials by DriverConfig.NextDial's rule until a connection opens,
// ReconnectTimeout passes (an error wrapping ErrHubGone and why, the last
// dial's error) or ctx ends.
func (s *Session) redial(ctx context.Context, why error) (transport.Conn, error) {
	rule := DriverConfig{Backoff: s.Backoff, ReconnectTimeout: s.ReconnectTimeout}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.ReconnectTimeout)
	defer cancel()
	last := why
	for attempt := 0; ; attempt++ {
		// When NextDial says the next dial would come after the
		// deadline, only ctx ends the wait (a nil channel never
		// delivers).
		var due <-chan time.Time
		var t *time.Timer
		if wait, ok := rule.NextDial(attempt, time.Since(start), s.Rand); ok {
			t = time.NewTimer(wait)
			due = t.C
		}
		select {
		case <-due:
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return nil, fmt.Errorf("%w: not back within %v: %w", ErrHubGone, s.ReconnectTimeout, last)
		}
		conn, err := s.Dial(ctx)
		if err == nil {
			return conn, nil
		}
		if ctx.Err() == nil {
			// A dial cut short by our own deadline says nothing about the
			// hub: keep the previous dial's reason (a refusal, say).
			last = err
		}
		if s.Log != nil {
			s.Log.Debug("redial failed", "attempt", attempt+1, "err", err)
		}
	}
}
