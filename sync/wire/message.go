package wire

import (
	"fmt"
	"slices"
)

// ProtocolVersion is the version of the protocol this package speaks. It
// travels in every frame's header; ReadFrame refuses any other version with
// ErrVersion. Bump it whenever a change would make an older peer misread a
// frame (renaming or retyping a field, changing the frame layout); adding
// a field does not need a bump, because decoders skip fields they do not know.
//
// Version 2: Session.ZeroParts (parts lying wholly in frozen layers are
// neither pushed nor merged); a version-1 worker would push them and wait
// for them in Merged forever, so it is refused with CodeVersion instead.
const ProtocolVersion uint16 = 2

// Kind names a message kind. The set is closed: a frame of any other kind is
// refused with ErrUnknownKind. The numbers are part of the protocol: never
// renumber, only append.
type Kind uint8

// The message kinds, in the order a session uses them.
const (
	KindRegister      Kind = 1 // worker → hub: here I am
	KindWelcome       Kind = 2 // hub → worker: the model, its state and your batch size
	KindPush          Kind = 3 // worker → hub: my gradient for an iteration
	KindMerged        Kind = 4 // hub → workers: the merged gradient, next batch sizes
	KindResyncRequest Kind = 5 // worker → hub: send me the model state again
	KindResyncAnswer  Kind = 6 // hub → worker: the model state
	KindGoodbye       Kind = 7 // either way: the session ends (from the hub: final weights)
	KindReject        Kind = 8 // either way: a refusal with a reason for the user
	KindStatus        Kind = 9 // worker → hub: my battery changed (only to a hub whose Session.Status is set)

	maxKind = KindStatus
)

var kindNames = [...]string{
	KindRegister:      "register",
	KindWelcome:       "welcome",
	KindPush:          "push",
	KindMerged:        "merged",
	KindResyncRequest: "resync-request",
	KindResyncAnswer:  "resync-answer",
	KindGoodbye:       "goodbye",
	KindReject:        "reject",
	KindStatus:        "status",
}

// String returns the kind's name ("push"), or "kind(N)" for an unknown one.
func (k Kind) String() string {
	if k >= 1 && k <= maxKind {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Header is the part every message shares. On the wire it is followed by the
// message's Kind, which in Go is given by the message's type rather than by a
// field, so the two can never disagree.
type Header struct {
	// Version is the protocol version the frame was written with. ReadFrame
	// sets it; WriteFrame ignores it and always writes ProtocolVersion.
	Version uint16
	// Iteration is the training iteration the message belongs to: the one a
	// Push's gradient was computed at, the one a Merged closes, the one a
	// Welcome or ResyncAnswer's state is at (the next to compute).
	Iteration uint64
	// Sender is the peer or worker id of the sender. The receiver must not
	// trust it: it should compare it with what the transport authenticated.
	Sender string
}

// Head returns the header itself, so that every message (which embeds a
// Header) gives access to it through the Message interface.
func (h *Header) Head() *Header { return h }

// Message is one of the closed set of message kinds: *Register, *Welcome,
// *Push, *Merged, *ResyncRequest, *ResyncAnswer, *Goodbye, *Reject, *Status.
type Message interface {
	// Kind tells the message's kind, fixed by its Go type.
	Kind() Kind
	// Head returns the message's header for reading or setting.
	Head() *Header
	// reset zeroes the message for decoding into it again, keeping the
	// capacity of its float vectors; it also closes the set to this package.
	reset()
}

// New returns a zero message of kind k, or nil for an unknown kind.
func New(k Kind) Message {
	switch k {
	case KindRegister:
		return new(Register)
	case KindWelcome:
		return new(Welcome)
	case KindPush:
		return new(Push)
	case KindMerged:
		return new(Merged)
	case KindResyncRequest:
		return new(ResyncRequest)
	case KindResyncAnswer:
		return new(ResyncAnswer)
	case KindGoodbye:
		return new(Goodbye)
	case KindReject:
		return new(Reject)
	case KindStatus:
		return new(Status)
	}
	return nil
}

// Register is a worker's first message to the hub.
type Register struct {
	Header `msgpack:"-"`
	// Device is a human-readable device name ("Pixel 7").
	Device string `msgpack:"device"`
	// Backend is the compute backend the worker runs ("cpu", "opencl").
	Backend string `msgpack:"backend"`
	// Speed is the worker's measured throughput in samples per second, the
	// hub's first guess for sizing its batch.
	Speed float64 `msgpack:"speed"`
	// Shard names the part of the data set the worker holds.
	Shard string `msgpack:"shard"`
	// Info carries optional extras (an auth token, an app version) without a
	// protocol change.
	Info map[string]string `msgpack:"info"`
	// Classes names the classes of the worker's data, indexed by label (an
	// image folder's sorted class folder names). A hub whose model names its
	// classes refuses, with CodeClasses, a worker whose list differs or is
	// empty (an older worker, which sends none): label i must mean the same
	// class on every node. Added in version 2 without a bump: an older hub
	// skips the field.
	Classes []string `msgpack:"classes,omitempty"`
	// Battery is the worker's battery when it registers (zero: unknown,
	// left out). Added in version 2 without a bump: an older hub skips it.
	Battery Battery `msgpack:"battery,omitempty"`
}

// Welcome is the hub's answer to Register: everything a worker needs to join
// the run at the header's Iteration.
type Welcome struct {
	Header `msgpack:"-"`
	// WorkerID is the id the hub gives the worker; the worker uses it as its
	// Sender from now on, and it keys Merged.BatchSizes.
	WorkerID string `msgpack:"worker_id"`
	// Model names the architecture ("lenet-caffe"); ModelConfig is its
	// configuration, opaque to this package (models/ encodes it).
	Model       string `msgpack:"model"`
	ModelConfig []byte `msgpack:"model_config"`
	// ModelState is the current weights, batch-norm statistics and
	// optimizer state.
	ModelState `msgpack:"state,noinline"`
	// BatchSize is the worker's batch size for the first iteration.
	BatchSize int `msgpack:"batch"`
	// Session holds the run's settings, which every node must share.
	Session Session `msgpack:"session"`
}

// ModelState is everything that changes during training and that a joining
// or resynchronising worker must copy: Welcome and ResyncAnswer carry it.
type ModelState struct {
	// Weights is the flat parameter vector (solver.Net.Params).
	Weights Floats `msgpack:"weights"`
	// State is the flat vector of untrained tensors: batch-norm running
	// statistics (solver.Net.State).
	State Floats `msgpack:"bn_state"`
	// Optimizer is the optimizer's name, step count and tensors.
	Optimizer OptimizerState `msgpack:"optimizer"`
}

// OptimizerState is an optimizer's saved state (solver.Optimizer.State).
type OptimizerState struct {
	// Name is the optimizer ("sgd", "adam").
	Name string `msgpack:"name"`
	// Steps is the number of steps taken (Adam's bias correction needs it).
	Steps int64 `msgpack:"steps"`
	// Tensors are the optimizer's vectors, each as long as the weights,
	// in a fixed order (sorted by name) so that encoding is deterministic.
	Tensors []NamedFloats `msgpack:"tensors"`
}

// NamedFloats is a named float vector ("momentum", "exp_avg").
type NamedFloats struct {
	Name   string `msgpack:"name"`
	Values Floats `msgpack:"values"`
}

// Session holds a run's settings. Every node applies the same optimizer step
// to the same merged gradient, so these must be identical everywhere.
type Session struct {
	// GlobalBatch is the number of samples per iteration, summed over workers.
	GlobalBatch int `msgpack:"global_batch"`
	// Iterations is the number of iterations of the run; 0 means until the
	// hub's stopping rule fires.
	Iterations uint64 `msgpack:"iterations"`
	// DeadlineMillis is the barrier's deadline per iteration in
	// milliseconds; 0 means none.
	DeadlineMillis int64 `msgpack:"deadline_ms"`
	// Compression names the gradient codec of Push and Merged (see
	// sync/compress: "none" or "" for raw float32 in Gradient; "fp16",
	// "int8", "topk:F" for an encoded payload in Enc). The hub chooses it;
	// every node encodes and decodes with it.
	Compression string `msgpack:"compression"`
	// Parts, when it has more than one entry, splits the flat gradient into
	// parts pushed and merged separately (layer-wise overlap): part j is
	// values [Parts[j], Parts[j+1]) (the last runs to the end). Parts[0] is
	// 0 and the offsets increase. Empty means one part, the whole vector.
	Parts []int `msgpack:"parts"`
	// LR is the learning-rate schedule.
	LR Schedule `msgpack:"lr"`
	// Optimizer hyper-parameters (solver.NewOptimizer).
	Momentum    float32 `msgpack:"momentum"`
	WeightDecay float32 `msgpack:"weight_decay"`
	Nesterov    bool    `msgpack:"nesterov"`
	// WorkerMomentum, when above 0, turns on momentum correction in a
	// top-k session (compress.Feedback.SetMomentum): every worker runs the
	// SGD momentum on its own gradient before sparsifying it, and every
	// node steps on the merged update with Momentum 0.
	WorkerMomentum float32 `msgpack:"worker_momentum,omitempty"`
	// WorkerBeta2, when above 0, turns on Adam correction instead
	// (compress.Feedback.SetAdam): every worker runs Adam with β1
	// WorkerMomentum, β2 WorkerBeta2 and ε WorkerEps on its own gradient
	// plus WorkerWeightDecay times its weights (Adam's L2 decay) and sends
	// the top-k of the accumulated step directions; every node steps on
	// the merged update with SGD, Momentum 0 and WeightDecay 0.
	WorkerBeta2       float32 `msgpack:"worker_beta2,omitempty"`
	WorkerEps         float32 `msgpack:"worker_eps,omitempty"`
	WorkerWeightDecay float32 `msgpack:"worker_weight_decay,omitempty"`
	// TopKMin is the fewest values a top-k push of a part keeps
	// (compress.TopK.Min); 0 means 1.
	TopKMin int `msgpack:"topk_min,omitempty"`
	// TopKWarmup is the number of iterations over which a top-k session's
	// workers send denser pushes (compress.WarmupFraction of the trainer
	// iteration, the same on every worker); 0 means none.
	TopKWarmup uint64 `msgpack:"topk_warmup,omitempty"`
	// Frozen names the layers that do not learn (solver.Net.Freeze): every
	// node freezes them, so that all apply the step to the same ranges.
	Frozen []string `msgpack:"frozen,omitempty"`
	// ZeroParts lists, in increasing order, the parts (indices into
	// Parts) that lie wholly in frozen layers: their gradient is zero on
	// every node, so workers do not push them, the hub neither waits for
	// them nor sends them in Merged, and every node applies zeros there.
	// Without layer-wise overlap a session with frozen layers still has
	// Parts: one per run of frozen or trainable layers.
	ZeroParts []int `msgpack:"zero_parts,omitempty"`
	// Status tells the worker that this hub takes Status messages (kind
	// 9): a worker sends them only then, so that a hub from before them,
	// which would refuse the unknown kind and drop the connection, never
	// gets one. Added in version 2 without a bump: an older worker skips
	// it and never sends one.
	Status bool `msgpack:"status,omitempty"`
}

// Schedule describes a learning-rate schedule of the solver package by its
// parameters: Kind "constant" (Base), "step" (Base, Gamma, Every) or
// "cosine" (Base, Min, Total, Warmup).
type Schedule struct {
	Kind   string  `msgpack:"kind"`
	Base   float32 `msgpack:"base"`
	Min    float32 `msgpack:"min"`
	Gamma  float32 `msgpack:"gamma"`
	Every  int     `msgpack:"every"`
	Total  int     `msgpack:"total"`
	Warmup int     `msgpack:"warmup"`
}

// Push carries a worker's gradient for the header's Iteration.
type Push struct {
	Header `msgpack:"-"`
	// Samples is the number of samples the gradient was averaged over; the
	// hub weights the gradient by it.
	Samples int `msgpack:"samples"`
	// ComputeNanos is how long forward and backward took, in nanoseconds;
	// the hub sizes the next batch from it.
	ComputeNanos int64 `msgpack:"compute_ns"`
	// Loss is the mean training loss over the batch.
	Loss float32 `msgpack:"loss"`
	// Gradient is the flat gradient of part Part (the whole vector when
	// the session has one part), raw, when the session does not compress;
	// the hub checks its length with CheckLen.
	Gradient Floats `msgpack:"grad"`
	// Part is which part of the gradient this push carries (Session.Parts);
	// 0 when the session has one part. A worker pushes every part once per
	// iteration, each as soon as its layers' backward pass is done; Samples
	// and Loss are the same in all of them, ComputeNanos is the time until
	// this part was ready (the hub keeps the largest).
	Part int `msgpack:"part"`
	// Enc is the part encoded with the session's codec (sync/compress),
	// when the session compresses; Gradient is then empty.
	Enc []byte `msgpack:"enc"`
	// State is the worker's batch-norm running statistics after this
	// iteration's forward pass (solver.Net.State), or empty for a model
	// without any. The hub averages them like the gradients, so that the
	// statistics every node evaluates with are the same and reflect every
	// worker's data.
	State Floats `msgpack:"bn_state,omitempty"`
	// Battery is the worker's battery when it pushed (zero: unknown, left
	// out). Added in version 2 without a bump: an older hub skips it.
	Battery Battery `msgpack:"battery,omitempty"`
}

// Merged closes the header's Iteration: every node applies Gradient with
// learning rate LR.
type Merged struct {
	Header `msgpack:"-"`
	// Gradient is part Part of the sample-weighted mean of the gradients
	// that arrived, raw, when the session does not compress.
	Gradient Floats `msgpack:"grad"`
	// Part is which part of the merged update this message carries.
	Part int `msgpack:"part"`
	// Enc is the part encoded with the session's codec, when it
	// compresses. Every node applies the decoded values, the hub too, so
	// a lossy codec does not make the weights differ.
	Enc []byte `msgpack:"enc"`
	// Partial marks a part sent ahead (layer-wise overlap): it carries no
	// batch sizes, hash or learning rate, and nobody steps yet. The last
	// Merged of an iteration is not partial: it carries the remaining part
	// and the rest, and a worker that holds every part then steps.
	Partial bool `msgpack:"partial"`
	// BatchSizes gives every live worker's batch size for the next
	// iteration, keyed by worker id.
	BatchSizes BatchSizes `msgpack:"batches"`
	// WeightsHash is a hash of the hub's weights after this step; a worker
	// whose own hash differs resynchronises. The zero Hash means none sent.
	WeightsHash Hash `msgpack:"weights_hash"`
	// LR is the learning rate of this step.
	LR float32 `msgpack:"lr"`
	// State is the sample-weighted mean of the pushes' batch-norm
	// statistics; every node loads it after the step. Empty when no push
	// carried any: nodes then keep their own.
	State Floats `msgpack:"bn_state,omitempty"`
}

// ResyncRequest asks the hub for the model state again (after a missed
// deadline or a hash mismatch).
type ResyncRequest struct {
	Header `msgpack:"-"`
	Reason string `msgpack:"reason"`
}

// ResyncAnswer carries the model state at the header's Iteration.
type ResyncAnswer struct {
	Header     `msgpack:"-"`
	ModelState `msgpack:"state,noinline"`
}

// Goodbye ends a session. From the hub it carries the final weights and
// batch-norm state (either may be empty when the run was aborted).
type Goodbye struct {
	Header       `msgpack:"-"`
	Reason       string `msgpack:"reason"`
	FinalWeights Floats `msgpack:"weights"`
	FinalState   Floats `msgpack:"bn_state"`
}

// Status is a worker's news between its pushes: its battery changed. A
// parked worker pushes nothing, so this is how the hub learns that it is on
// a charger again. A worker sends one only to a hub whose Session.Status is
// set, and only when the battery's status or whole percentage changed.
type Status struct {
	Header  `msgpack:"-"`
	Battery Battery `msgpack:"battery"`
}

// Reject refuses a request; the worker shows Message to its user.
type Reject struct {
	Header `msgpack:"-"`
	// Code is machine-readable: one of the Code constants, or another
	// string a newer peer defined.
	Code string `msgpack:"code"`
	// Message is human-readable.
	Message string `msgpack:"message"`
}

// Reject codes.
const (
	CodeVersion  = "version"  // the peer speaks another protocol version
	CodeAuth     = "auth"     // missing or wrong credentials
	CodeFull     = "full"     // the hub takes no more workers
	CodeModel    = "model"    // a vector's length does not match the model
	CodeProtocol = "protocol" // a message came that was not expected now
	CodeClasses  = "classes"  // the worker's data has other classes than the model
	CodeInternal = "internal" // the sender failed
)

// Kind implements Message.
func (*Register) Kind() Kind { return KindRegister }

// Kind implements Message.
func (*Welcome) Kind() Kind { return KindWelcome }

// Kind implements Message.
func (*Push) Kind() Kind { return KindPush }

// Kind implements Message.
func (*Merged) Kind() Kind { return KindMerged }

// Kind implements Message.
func (*ResyncRequest) Kind() Kind { return KindResyncRequest }

// Kind implements Message.
func (*ResyncAnswer) Kind() Kind { return KindResyncAnswer }

// Kind implements Message.
func (*Goodbye) Kind() Kind { return KindGoodbye }

// Kind implements Message.
func (*Reject) Kind() Kind { return KindReject }

// Kind implements Message.
func (*Status) Kind() Kind { return KindStatus }

func (m *Register) reset()      { *m = Register{} }
func (m *ResyncRequest) reset() { *m = ResyncRequest{} }
func (m *Reject) reset()        { *m = Reject{} }
func (m *Status) reset()        { *m = Status{} }
func (m *Push) reset()          { *m = Push{Gradient: m.Gradient[:0], State: m.State[:0]} }
func (m *Merged) reset()        { *m = Merged{Gradient: m.Gradient[:0], State: m.State[:0]} }
func (m *Welcome) reset()       { *m = Welcome{ModelState: m.ModelState.kept()} }
func (m *ResyncAnswer) reset()  { *m = ResyncAnswer{ModelState: m.ModelState.kept()} }
func (m *Goodbye) reset() {
	*m = Goodbye{FinalWeights: m.FinalWeights[:0], FinalState: m.FinalState[:0]}
}

// kept returns an empty ModelState that keeps s's vector capacity.
func (s ModelState) kept() ModelState {
	return ModelState{Weights: s.Weights[:0], State: s.State[:0]}
}

// Interface checks.
var (
	_ Message = (*Register)(nil)
	_ Message = (*Welcome)(nil)
	_ Message = (*Push)(nil)
	_ Message = (*Merged)(nil)
	_ Message = (*ResyncRequest)(nil)
	_ Message = (*ResyncAnswer)(nil)
	_ Message = (*Goodbye)(nil)
	_ Message = (*Reject)(nil)
	_ Message = (*Status)(nil)
)

// SortTensors sorts an optimizer's tensors by name, the order senders should
// use so that equal states encode to equal bytes.
func (o *OptimizerState) SortTensors() {
	slices.SortFunc(o.Tensors, func(a, b NamedFloats) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}
