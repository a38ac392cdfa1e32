package hub

import (
	"fmt"

	"github.com/cotrain/cotrain/sync/wire"
)

// This file holds the core's output: Ready, with the optimizer step to
// take (ApplyRequest), the messages to send (Envelope) and the events to log
// (Event), and ApplyDone, the local input that answers an ApplyRequest. The
// other inputs' types are the wire messages and Config (config.go).

// EventKind says what an Event reports.
type EventKind uint8

// The event kinds.
const (
	EventJoined        EventKind = iota + 1 // a worker registered (Peer)
	EventStarted                            // the first iteration opened (Workers)
	EventLeft                               // a worker left or was forgotten (Peer, Text)
	EventLate                               // a worker missed the deadline (Peer, Iteration)
	EventDropped                            // a worker missed MaxMisses deadlines in a row and was dropped
	EventResync                             // a worker was sent the full state (Peer, Iteration, Text)
	EventMerged                             // an iteration closed (Iteration, Workers, Samples, Loss, LR)
	EventRetry                              // the deadline passed with no push: the iteration reopens
	EventParked                             // no worker is left: the run waits for one to register
	EventRefused                            // an input was refused (Peer, Err)
	EventDone                               // the run ended (Iteration, Text)
	EventWorkerParked                       // a worker gets no batch: it does not pay for its communication (Peer, Iteration, Text)
	EventWorkerResumed                      // a parked worker gets a batch again (Peer, Iteration, Text)
	EventWorkerProbed                       // a parked worker gets one batch to be measured again (Config.ParkProbe; Peer, Iteration, Text)
	EventBattery                            // a worker reported a battery other than it did before (Peer, Battery, Text)
)

var eventNames = [...]string{"", "joined", "started", "left", "late", "dropped", "resync",
	"merged", "retry", "parked", "refused", "done", "worker-parked", "worker-resumed", "worker-probed", "battery"}

// String returns the kind's name ("merged").
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k > 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is something the driver should log. Fields not listed for a kind
// are zero.
type Event struct {
	Kind      EventKind
	Peer      string
	Iteration uint64
	Workers   int     // workers merged, or starting
	Samples   int     // samples merged
	Loss      float64 // sample-weighted mean training loss of the merge
	LR        float32 // learning rate of the step
	// BytesUp and BytesDown (EventMerged) are the gradient payload bytes
	// of the iteration: those of the pushes accepted, and those of the
	// merged update sent, every copy counted (frame headers, hashes and
	// batch sizes not included).
	BytesUp, BytesDown int64
	// Battery (EventBattery) is the worker's battery as it reported it.
	Battery wire.Battery
	Text    string
	Err     error
}

// Envelope is a message and the peer id it goes to.
type Envelope struct {
	To  string
	Msg wire.Message
}

// ApplyRequest asks the driver to take iteration Iteration's optimizer step
// on the master model: upload Gradient as the net's gradient and call
// Trainer.Apply, then, when State is not nil, upload State as the net's
// batch-norm state (the master runs no forward pass: its statistics are the
// mean of the workers'). Apply (master.go) does exactly that. The driver
// reports the step with Applied before any other input.
type ApplyRequest struct {
	Iteration uint64 // the master is at Iteration and steps to Iteration+1
	// Gradient is the merged gradient as every worker decodes it from the
	// Merged payloads, the net's full length (zero in frozen parts). It is
	// the core's buffer: read it, do not keep it past Applied.
	Gradient []float32
	State    []float32 // the merged batch-norm statistics, or nil
	// Hash asks for the weights' hash after the step (ApplyDone.WeightsHash;
	// false under Config.NoWeightsHash).
	Hash bool
}

// ApplyDone reports a finished ApplyRequest.
type ApplyDone struct {
	Iteration uint64 // the request's
	// LR is the learning rate the step took: the schedule's at Iteration
	// (Trainer.LR before Apply). The Merged carries it to the workers.
	LR float32
	// WeightsHash is state.NetHash of the master after the step (and the
	// batch-norm upload), when the request asked for it.
	WeightsHash wire.Hash
}

// Ready is what the core asks its driver to do. Messages may share vectors
// with each other (one Merged goes to every worker): they are read-only for
// the driver and are never modified by the core after Ready returns them.
type Ready struct {
	// Apply, when not nil, is an optimizer step to take before anything
	// else: the Merged of its iteration is not in Messages yet (only the
	// parts sent before it), and the core takes no input but Applied until
	// it is reported. Applied clears it.
	Apply *ApplyRequest
	// Messages are to be sent in order; order matters between the
	// messages to one peer (a Merged then a Goodbye).
	Messages []Envelope
	// Events are to be logged.
	Events []Event
	// Done is true once the run has ended and the final Goodbyes are in
	// Messages (or were in an earlier Ready).
	Done bool
}
