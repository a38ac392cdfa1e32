package worker

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// DriverConfig holds the worker drivers' timing rules: how a Session dials
// the hub again after losing it. cmd/worker takes its flags' defaults from
// DefaultDriverConfig, and the simulator (sim/faults.go) follows NextDial
// on its virtual clock, so the rule changed here changes in both.
type DriverConfig struct {
	// Backoff schedules the redials.
	Backoff Backoff
	// ReconnectTimeout bounds them, from the moment the connection
	// dropped (0: never reconnect).
	ReconnectTimeout time.Duration
}

// DefaultDriverConfig returns the rule cotrain runs with: DefaultBackoff
// for up to 2 minutes.
func DefaultDriverConfig() DriverConfig {
	return DriverConfig{Backoff: DefaultBackoff(), ReconnectTimeout: 2 * time.Minute}
}

// Validate reports a rule that cannot work.
func (c DriverConfig) Validate() error {
	if c.ReconnectTimeout < 0 {
		return fmt.Errorf("%w: reconnect timeout %v, want 0 or more", ErrConfig, c.ReconnectTimeout)
	}
	if c.ReconnectTimeout == 0 {
		return nil
	}
	return c.Backoff.Validate()
}

// NextDial is Session's retry rule after the hub's connection dropped:
// dial attempt (0 for the first) comes wait after the previous one ended
// (or after the drop), elapsed after the drop, drawing the jitter from r.
// ok is false when that dial would come later than ReconnectTimeout after
// the drop: the worker gives up at ReconnectTimeout instead, without
// dialling.
func (c DriverConfig) NextDial(attempt int, elapsed time.Duration, r *rand.Rand) (wait time.Duration, ok bool) {
	wait = c.Backoff.Wait(attempt, r)
	return wait, elapsed+wait <= c.ReconnectTimeout
}
