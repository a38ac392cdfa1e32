package worker

import (
	"errors"
	"fmt"

	"github.com/cotrain/cotrain/sync/wire"
)

// Sentinel errors. Step and Computed return an error wrapping one of them
// for every input they refuse; a refused input changes nothing but what the
// error says (a resync request may be queued).
var (
	ErrConfig      = errors.New("worker: invalid config")
	ErrUnknownPeer = errors.New("worker: message from a peer other than the hub")
	ErrUnexpected  = errors.New("worker: unexpected input")
	ErrStale       = errors.New("worker: message for an iteration already past")
	ErrFuture      = errors.New("worker: message for an iteration not reached")
	ErrBadMessage  = errors.New("worker: malformed message from the hub")
	ErrBadCompute  = errors.New("worker: compute completion does not match the request")
	ErrModel       = errors.New("worker: cannot build the hub's model")
	ErrDone        = errors.New("worker: the session is over")
)

// Config holds a worker's settings.
type Config struct {
	// Name is the worker's Sender until the hub's Welcome gives it an id.
	Name string
	// Hub is the hub's peer id: Step refuses messages from any other.
	Hub string
	// Device, Backend, Shard, Speed, Info and Classes go into the Register
	// message (see wire.Register). Speed, in samples per second, sizes the
	// first batch under the hub's adaptive policy; 0 means unknown. Classes
	// names the classes of the worker's data, by label: a hub whose model
	// names its classes refuses a worker whose list differs.
	Device  string
	Backend string
	Shard   string
	Speed   float64
	Info    map[string]string
	Classes []string
	// Battery is the battery when the worker registers (the zero Battery:
	// unknown). The driver reports later readings with Core.SetBattery.
	Battery wire.Battery
}

// DefaultConfig returns a config that talks to a hub named "hub".
func DefaultConfig() Config {
	return Config{Name: "worker", Hub: "hub", Backend: "cpu"}
}

// Validate returns an error wrapping ErrConfig for the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: empty Name", ErrConfig)
	case c.Hub == "":
		return fmt.Errorf("%w: empty Hub", ErrConfig)
	case c.Speed < 0 || c.Speed != c.Speed:
		return fmt.Errorf("%w: Speed %v, want 0 (unknown) or more", ErrConfig, c.Speed)
	}
	return nil
}
