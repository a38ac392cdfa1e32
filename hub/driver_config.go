package hub

import (
	"fmt"
	"time"
)

// DriverConfig holds the hub driver's timing rules and bounds: the rules
// that live around the core, not in it. cmd/hub takes its flags' defaults
// from DefaultDriverConfig, Driver fills the fields it is given as zero
// from it, and the simulator (sim/faults.go) plays the same rules on its
// virtual clock, so a rule changed here changes in all three.
type DriverConfig struct {
	// Tick is the period of Core.Tick, the resolution of the barrier's
	// deadline (cmd/hub --tick). Config.Tick must equal it.
	Tick time.Duration
	// Deadline is the barrier deadline cmd/hub asks for (--deadline);
	// Config.DeadlineTicks is Deadline/Tick.
	Deadline time.Duration
	// DeadlineFloor is the least measured deadline (Config.DeadlineFactor):
	// Config.DeadlineFloorTicks is DeadlineFloor/Tick, rounded up.
	DeadlineFloor time.Duration
	// QueueLen bounds each worker's outgoing queue (messages); a worker
	// whose queue overflows is disconnected.
	QueueLen int
	// DrainTimeout bounds how long the driver waits, at the end, for the
	// final messages (Goodbyes with the weights) to reach the workers.
	DrainTimeout time.Duration
	// MaxPending caps the connections open at once that have not (yet)
	// registered; one beyond it is closed as it arrives.
	MaxPending int
	// RegisterTimeout is how long a connection may stay open without a
	// Register the core accepted; then the driver closes it (how a lost
	// Register is recovered: the worker's session dials again).
	RegisterTimeout time.Duration
}

// DefaultDriverConfig returns the rules cotrain runs with: a 50 ms tick, a
// 10 s barrier deadline at most (measured, at least 1 s), 64 queued messages per worker, 10 s to drain, 16
// unregistered connections at most, each closed after 10 s.
func DefaultDriverConfig() DriverConfig {
	return DriverConfig{
		Tick:            50 * time.Millisecond,
		Deadline:        10 * time.Second,
		DeadlineFloor:   time.Second,
		QueueLen:        64,
		DrainTimeout:    10 * time.Second,
		MaxPending:      16,
		RegisterTimeout: 10 * time.Second,
	}
}

// Validate returns an error wrapping ErrConfig for the first field that
// cannot work.
func (c DriverConfig) Validate() error {
	switch {
	case c.Tick <= 0, c.Deadline < c.Tick:
		return fmt.Errorf("%w: driver tick %v and deadline %v: want a positive tick and a deadline of at least one tick", ErrConfig, c.Tick, c.Deadline)
	case c.QueueLen < 1, c.MaxPending < 1:
		return fmt.Errorf("%w: driver queue %d and pending connections %d: want at least 1 each", ErrConfig, c.QueueLen, c.MaxPending)
	case c.DrainTimeout <= 0, c.RegisterTimeout <= 0:
		return fmt.Errorf("%w: driver drain timeout %v and register timeout %v: want both positive", ErrConfig, c.DrainTimeout, c.RegisterTimeout)
	}
	return nil
}

// DeadlineTicks is Deadline in ticks, rounded up: Config.DeadlineTicks
// for a barrier that waits at least Deadline.
func (c DriverConfig) DeadlineTicks() int {
	return int((c.Deadline + c.Tick - 1) / c.Tick)
}

// DeadlineFloorTicks is DeadlineFloor in ticks, rounded up:
// Config.DeadlineFloorTicks.
func (c DriverConfig) DeadlineFloorTicks() int {
	return int((c.DeadlineFloor + c.Tick - 1) / c.Tick)
}

// orDefaults returns the driver's settings with every zero field taken
// from DefaultDriverConfig.
func (d *Driver) orDefaults() DriverConfig {
	c := DefaultDriverConfig()
	c.Tick = d.Tick
	if d.QueueLen > 0 {
		c.QueueLen = d.QueueLen
	}
	if d.DrainTimeout > 0 {
		c.DrainTimeout = d.DrainTimeout
	}
	if d.MaxPending > 0 {
		c.MaxPending = d.MaxPending
	}
	if d.RegisterTimeout > 0 {
		c.RegisterTimeout = d.RegisterTimeout
	}
	return c
}
