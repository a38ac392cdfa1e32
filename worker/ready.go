package worker

import (
	"fmt"

	"github.com/cotrain/cotrain/sync/wire"
)

// This file holds the core's output, Ready (messages for the hub, a
// ComputeRequest, events to log), and ComputeDone, the local input that
// answers a ComputeRequest.

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
