package hub

import (
	"fmt"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// This file is the driver's side of the master model: the Model a core is
// built for (NewCore), what the core is told of it (modelInfo), its reads
// (Snapshotter) and its writes, the optimizer steps the core asks for
// (Apply). The core's files never name the trainer: the driver owns it.

// Model is the hub's master copy of the network and how to describe it to
// workers.
type Model struct {
	// Name and Config name the architecture (models.Build); workers build
	// the same network from them. Name may be models.GraphModel: Meta then
	// holds the layers.
	Name   string
	Config models.Config
	// Meta holds the entries that define the model beyond Name and Config
	// (models.DefiningMeta): an imported model's graph, its class names and
	// input normalisation. The Welcome carries them. When they name the
	// classes, a worker must register with the same list (wire.Register
	// Classes): one whose list differs is refused with a Reject
	// wire.CodeClasses that names the missing and extra classes.
	Meta [][2]string
	// Trainer holds the master network with its weights initialised or
	// loaded, its optimizer (Opt) and schedule (Sched). Trainer.Iter is the
	// iteration the run starts (or resumes) at. The driver owns it: it runs
	// the core's ApplyRequests on it (Apply) and may read it (to save a
	// checkpoint) between inputs; nothing else may change it during the run.
	Trainer *solver.Trainer
}

// NewCore returns a hub core that waits for cfg.MinWorkers registrations,
// for the master model m. The core reads m.Trainer's state (Snapshot) for
// the Welcomes, ResyncAnswers and Goodbyes it writes, and asks for each
// optimizer step with an ApplyRequest: run it with Apply, or ApplyPending.
func NewCore(cfg Config, m Model) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	info, err := describe(cfg, m)
	if err != nil {
		return nil, err
	}
	return newCore(cfg, info)
}

// describe checks m against cfg and returns what the core knows of it.
func describe(cfg Config, m Model) (modelInfo, error) {
	tr := m.Trainer
	if tr == nil || tr.Net == nil || tr.Opt == nil || tr.Sched == nil {
		return modelInfo{}, fmt.Errorf("%w: the model needs a trainer with a net, an optimizer and a schedule", ErrConfig)
	}
	if tr.Iter < 0 {
		return modelInfo{}, fmt.Errorf("%w: trainer at iteration %d", ErrConfig, tr.Iter)
	}
	if _, err := models.Lookup(m.Name); err != nil && m.Name != models.GraphModel {
		return modelInfo{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	mcfg, err := state.EncodeModel(m.Config, m.Meta)
	if err != nil {
		return modelInfo{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	info := modelInfo{
		name: m.Name, config: mcfg,
		iter:     uint64(tr.Iter),
		params:   tr.Net.NumParams(),
		stateLen: tr.Net.State.Len(),
		master:   trainerState{tr},
	}
	if models.MetaValue(m.Meta, models.MetaLabels) != "" {
		if info.labels, _, err = models.Labels(m.Meta, tr.Net.Out.Size()); err != nil {
			return modelInfo{}, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		labels := info.labels
		info.classDiff = func(worker []string) string { return models.DescribeLabelDiff(labels, worker, "the model") }
	}
	if err := state.Describe(&info.session, tr.Opt, tr.Sched); err != nil {
		return modelInfo{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := checkNodeOptimizer(cfg, tr.Opt, info.session.Momentum); err != nil {
		return modelInfo{}, err
	}
	// Workers freeze what the master net has frozen: a node that stepped a
	// layer the others keep fixed would differ from them after one merge.
	for _, l := range tr.Net.Layers() {
		if l.Frozen && l.Params > 0 {
			info.session.Frozen = append(info.session.Frozen, l.Name)
		}
	}
	info.starts, info.zero = SessionParts(tr.Net, cfg.Overlap)
	return info, nil
}

// checkNodeOptimizer refuses momentum or Adam correction on the workers
// (Config.WorkerMomentum, WorkerBeta2) unless the nodes step with plain
// SGD: momentum 0, no Nesterov, and no weight decay under Adam correction.
func checkNodeOptimizer(cfg Config, opt solver.Optimizer, momentum float32) error {
	m := cfg.WorkerMomentum
	if m <= 0 && cfg.WorkerBeta2 <= 0 {
		return nil
	}
	sgd, ok := opt.(*solver.SGD)
	if !ok || sgd.Momentum != 0 || sgd.Nesterov {
		return fmt.Errorf("%w: WorkerMomentum %v, WorkerBeta2 %v need the nodes' optimizer to be SGD with momentum 0, without Nesterov (got %T, session momentum %v)",
			ErrConfig, m, cfg.WorkerBeta2, opt, momentum)
	}
	if cfg.WorkerBeta2 > 0 && sgd.WeightDecay != 0 {
		return fmt.Errorf("%w: Adam correction (WorkerBeta2 %v) decays the weights on the workers: the nodes' SGD has weight decay %v, want 0",
			ErrConfig, cfg.WorkerBeta2, sgd.WeightDecay)
	}
	return nil
}

// trainerState is the core's Snapshotter over the master trainer.
type trainerState struct{ tr *solver.Trainer }

// Snapshot returns state.Capture of the master net, with its optimizer's
// state when opt is set.
func (s trainerState) Snapshot(opt bool) wire.ModelState {
	if opt {
		return state.Capture(s.tr.Net, s.tr.Opt)
	}
	return state.Capture(s.tr.Net, nil)
}

// Apply takes the step r asks for on tr: the merged gradient uploaded into
// the net's gradient, Trainer.Apply, the merged batch-norm statistics
// uploaded, and the weights hashed if r asks. tr must be at r.Iteration
// (the core's master): an error says it is not, and nothing is changed.
func Apply(tr *solver.Trainer, r ApplyRequest) (ApplyDone, error) {
	if uint64(tr.Iter) != r.Iteration {
		return ApplyDone{}, fmt.Errorf("%w: the step of iteration %d asked of a trainer at %d", ErrUnexpected, r.Iteration, tr.Iter)
	}
	d := ApplyDone{Iteration: r.Iteration, LR: tr.LR()}
	tr.Net.B.Upload(tr.Net.Grads, r.Gradient)
	tr.Apply()
	if r.State != nil {
		tr.Net.SetState(r.State)
	}
	if r.Hash {
		d.WeightsHash = state.NetHash(tr.Net)
	}
	return d, nil
}

// ApplyPending runs the step c's Ready asks for, if any, on tr (Apply) and
// reports it (Applied): what a driver does after every input of a core
// built for tr, before handling the rest of the Ready.
func ApplyPending(c *Core, tr *solver.Trainer) error {
	r := c.Ready().Apply
	if r == nil {
		return nil
	}
	d, err := Apply(tr, *r)
	if err != nil {
		return err
	}
	return c.Applied(d)
}

// PartBounds returns the layer-wise parts of net's flat gradient: the
// offset where each layer with parameters starts, in order (solver.Net
// lays the layers out in order), as Session.Parts carries them.
func PartBounds(net *solver.Net) []int {
	var out []int
	off := 0
	for _, l := range net.Layers() {
		if l.Params > 0 {
			out = append(out, off)
			off += l.Params
		}
	}
	if len(out) == 0 {
		out = []int{0}
	}
	return out
}

// SessionParts returns the parts of a session's gradient over net and the
// ones among them that lie wholly in frozen layers (Session.Parts and
// Session.ZeroParts): with overlap one part per layer with parameters
// (PartBounds), else one per run of consecutive frozen or trainable
// layers, so that fine-tuning the last layers has two parts, the frozen
// prefix (zero) and the trainable suffix. A zero part's gradient is zero
// on every node: it is neither pushed nor merged. A net with nothing
// frozen, or nothing trainable, has no zero part (and, without overlap,
// one part): a session where nothing is pushed could never close.
func SessionParts(net *solver.Net, overlap bool) (starts, zero []int) {
	var frozen []bool // per part
	off := 0
	for _, l := range net.Layers() {
		if l.Params == 0 {
			continue
		}
		if overlap || len(frozen) == 0 || frozen[len(frozen)-1] != l.Frozen {
			starts = append(starts, off)
			frozen = append(frozen, l.Frozen)
		}
		off += l.Params
	}
	for j, f := range frozen {
		if f {
			zero = append(zero, j)
		}
	}
	if len(zero) == len(frozen) {
		zero = nil
	}
	if len(starts) == 0 || (!overlap && zero == nil) {
		starts = []int{0}
	}
	return starts, zero
}
