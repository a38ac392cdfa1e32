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

// ComputeRequest asks the driver for one forward and backward pass: Batch
// samples of the worker's next mini-batch through Trainer().Gradient, for
// iteration Iteration.
type ComputeRequest struct {
	Iteration uint64
	Batch     int
	// Parts are the offsets in Net.Grads where the session's gradient
	// parts start (Session.Parts; one part, {0}, without layer-wise
	// overlap and frozen layers). A driver that can tell when the backward
	// pass is done with a part's layers reports it with Core.PartDone, last
	// part first; the core ignores a part in frozen layers
	// (Session.ZeroParts), which is never pushed.
	Parts []int
}

// ComputeDone reports a finished ComputeRequest; the gradient is in the
// trainer's Net.Grads. Samples is how many samples the batch really held
// (1..Batch: an epoch's last batch may be short), Loss the mean loss
// Gradient returned, ComputeNanos the time the pass took.
type ComputeDone struct {
	Iteration    uint64
	Samples      int
	Loss         float64
	ComputeNanos int64
}

// EventKind says what an Event reports.
type EventKind uint8

// The event kinds.
const (
	EventWelcomed  EventKind = iota + 1 // the hub's Welcome was loaded (Iteration, Text: worker id)
	EventPushed                         // a gradient went out (Iteration, Loss)
	EventMerged                         // a merged step was applied (Iteration)
	EventMismatch                       // after a step the weights' hash differs from the hub's
	EventResync                         // a ResyncRequest went out (Text: why)
	EventResynced                       // the hub's state was loaded (Iteration)
	EventDiscarded                      // a finished compute was not pushed (Text: why)
	EventRefused                        // an input was refused (Err)
	EventDone                           // the session ended (Text: reason)
)

var eventNames = [...]string{"", "welcomed", "pushed", "merged", "mismatch", "resync",
	"resynced", "discarded", "refused", "done"}

// String returns the kind's name ("merged").
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k > 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is something the driver should log.
type Event struct {
	Kind      EventKind
	Iteration uint64
	Loss      float64
	Text      string
	Err       error
}

// Ready is what the core asks its driver to do.
type Ready struct {
	// Messages go to the hub, in order. They are the driver's after Ready:
	// the core never modifies them again.
	Messages []wire.Message
	// Compute, when not nil, is a pass to run. The driver must finish it
	// and report it with Computed before it starts another; the core does
	// not touch the network in between (see Core.Step).
	Compute *ComputeRequest
	// Events are to be logged.
	Events []Event
	// Done is true once the hub said Goodbye (Final holds the weights) or
	// refused the worker (Err says why).
	Done bool
}
