package sim

import (
	"fmt"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/hub/runspec"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/worker"
)

// Compression and layer-wise overlap in the simulator. The codec changes
// only what the cores put in their messages: the frames are measured as
// always, so a top-k push takes its real size's airtime. Overlap changes
// when the pushes happen: a phone's step is its forward pass, then the
// backward pass through the layers in reverse, each taking its share of
// the step's FLOPs (sim.FLOPs: a layer's backward costs twice its forward).
// Part j of the gradient — the parameters of the j-th layer that has any —
// is ready when the backward pass has gone through that layer, and the
// worker core is told so then (worker.Core.PartDone), so its push goes on
// the medium while the layers below are still computing. For lenet-caffe
// the two fully connected layers (93% of the parameters) are ready after
// 45% of the step.
//
// The hub's time: merging a part costs 2 operations per value and push
// plus one to encode it, and the final Merged adds the optimizer step
// (4 per parameter), at the hub's speed.

// comm is a run's compression and overlap setup.
type comm struct {
	readyAt []float64 // per part: the fraction of a step after which it is ready
	seen    map[*wire.Merged]bool
}

// setupComm sets the checker and part timings for the run's codec and
// overlap c (the scenario's; a solo run, whose hub is on the phone, sends
// nothing and compresses nothing; the "paper" policy sends whole
// gradients, one frame after the backward pass, as the paper's system did:
// newRunner sets both so).
func (r *runner) setupComm(net *solver.Net, c runspec.Codec) error {
	codec, err := compress.Parse(c.Compression)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	// The parts as the hub cuts them (frozen layers make parts of their
	// own that nobody sends; the checker never sees them).
	starts, _ := hub.SessionParts(net, c.Overlap)
	r.comm = comm{readyAt: []float64{1}, seen: map[*wire.Merged]bool{}}
	if c.Overlap {
		if r.comm.readyAt, err = partReadyAt(r.sc.Model, r.opt.ModelConfig, net.Layers()); err != nil {
			return err
		}
	}
	r.check = newChecker(net.NumParams(), starts, codec)
	return nil
}

// partReadyAt returns, for each layer with parameters in order (a part),
// the fraction of a training step after which the backward pass has
// produced its gradient: the forward pass (a third of the step) plus the
// backward pass of every layer from the last down to it.
func partReadyAt(model string, c models.Config, layers []solver.LayerInfo) ([]float64, error) {
	fwd, err := layerFLOPs(model, c)
	if err != nil {
		return nil, err
	}
	if len(fwd) != len(layers) {
		return nil, fmt.Errorf("sim: %s: %d layers counted, the net has %d", model, len(fwd), len(layers))
	}
	var total float64
	for _, f := range fwd {
		total += f
	}
	var out []float64
	back := 0.0 // backward FLOPs from the last layer down to layer i
	for i := len(layers) - 1; i >= 0; i-- {
		back += 2 * fwd[i]
		if layers[i].Params > 0 {
			out = append(out, (total+back)/(3*total))
		}
	}
	// out runs from the last layer to the first: parts are in layer order.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// scheduleParts tells p's core, at the virtual time each part of the step
// started at start (taking dur) is ready, that it is: the core pushes it
// then. The last part to be ready is left to Computed.
func (r *runner) scheduleParts(p *phone, req worker.ComputeRequest, start, dur int64, n int, loss float64) {
	if len(req.Parts) < 2 || len(req.Parts) != len(r.comm.readyAt) {
		return
	}
	gen := p.gen
	for j := len(req.Parts) - 1; j >= 1; j-- {
		at := start + int64(r.comm.readyAt[j]*float64(dur))
		d := worker.PartDone{Iteration: req.Iteration, Part: j, Samples: n, Loss: loss, ComputeNanos: at - start}
		r.clk.at(at, func() {
			if p.gen != gen {
				return
			}
			if err := p.core.PartDone(d); err != nil {
				r.note(fmt.Sprintf("%s: part refused: %v", p.spec.Name, err))
			}
			r.flushWorker(p)
		})
	}
}

// hubMerges checks every merged part the hub sends in rd against the
// pushes it accepted, and charges the hub's device the time to merge it
// (and, for the final Merged, to take the step); the messages go out once
// it is done. A part sent ahead again to a worker that just joined is the
// same message: checked and charged once.
func (r *runner) hubMerges(rd hub.Ready) {
	for _, env := range rd.Messages {
		m, ok := env.Msg.(*wire.Merged)
		if !ok || r.comm.seen[m] {
			continue
		}
		r.comm.seen[m] = true
		if err := r.check.merged(m); err != nil {
			r.fail(err)
			return
		}
		lo, hi := r.check.bounds[m.Part], r.check.bounds[m.Part+1]
		work := float64(float64(hi-lo) * float64(2*r.check.count[m.Part]+1)) // float64(): not fused on any target
		if !m.Partial {
			work += float64(4 * float64(r.paramCount))
			clear(r.comm.seen) // a new iteration's messages come next
			r.comm.seen[m] = true
		}
		start := max(r.clk.now, r.hubFree)
		r.hubFree = start + int64(work/r.hubDev.flops*1e9)
		r.segment("hub", "compute", start, r.hubFree, m.Iteration)
	}
}

// countGrad adds a push's or a merged update's frame to the run's
// gradient traffic.
func (r *runner) countGrad(m wire.Message, size int) {
	switch m.(type) {
	case *wire.Push:
		r.res.GradBytesUp += int64(size)
	case *wire.Merged:
		r.res.GradBytesDown += int64(size)
	}
}

// distributed reports whether every phone connected holds the model: the
// start of training, from which the run's times count. The model's
// distribution is not training: on a shared medium the second phone's
// Welcome waits for the first's (3.4 MB each for lenet-caffe with its
// optimizer state, 0.9 s at 32 Mbit/s), and a phone alone has none.
func (r *runner) distributed() bool {
	for _, p := range r.phones {
		if p.alive && p.core != nil && p.core.Trainer() == nil {
			return false
		}
	}
	return true
}
