package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/watch"
)

// jsonSink writes every event as a JSON line, but progress only every
// logEvery iterations (the dashboard and /api/events get every one).
func jsonSink(w io.Writer, logEvery int) func(watch.Event) {
	return func(e watch.Event) {
		if p, ok := e.Data.(*watch.Progress); ok && p.Iteration%uint64(logEvery) != 0 {
			return
		}
		watch.WriteLine(w, e)
	}
}

// textSink writes what a person watching the hub's terminal wants: a line
// per logEvery iterations, one per held-out evaluation. The log has the
// rest (joins, leaves, late workers).
func textSink(w io.Writer, logEvery int) func(watch.Event) {
	return func(e watch.Event) {
		switch d := e.Data.(type) {
		case *watch.Progress:
			if d.Iteration%uint64(logEvery) != 0 {
				return
			}
			var parts []string
			for _, x := range d.Workers {
				name := x.Name
				if name == "" {
					name = short(x.ID)
				}
				parts = append(parts, fmt.Sprintf("%s b=%d wait %.0fms", name, x.Batch, x.WaitMS))
			}
			fmt.Fprintf(w, "iter %d loss %.4f lr %.4f %.0f img/s %.0f/%.0f kB up/down | %s\n", d.Iteration, d.Loss, d.LR,
				d.SamplesPerSec, float64(d.BytesUp)/1e3, float64(d.BytesDown)/1e3, strings.Join(parts, " | "))
		case *watch.Eval:
			if d.Best == nil {
				fmt.Fprintf(w, "iter %d test accuracy %.4f, held-out loss %.4f on %d samples\n", d.Iteration, d.Accuracy, d.Loss, d.Samples)
			}
			if d.Best != nil && d.Stale != nil {
				fmt.Fprintf(w, "iter %d held-out loss %.4f (best %.4f, %d without improvement)\n", d.Iteration, d.Loss, *d.Best, *d.Stale)
			}
		}
	}
}

// evaluator evaluates snapshots of the master weights on a goroutine of
// its own, one at a time, so that the barrier never waits for it; a
// snapshot offered while one is being evaluated is skipped.
type evaluator struct {
	busy atomic.Bool
	run  func(ctx context.Context, params, state []float32) (acc, loss float64, n int)
}

// offer starts an evaluation of the weights (copied by the caller) unless
// one is running; publish gets the result.
func (e *evaluator) offer(ctx context.Context, params, state []float32, publish func(acc, loss float64, n int)) bool {
	if !e.busy.CompareAndSwap(false, true) {
		return false
	}
	go func() {
		defer e.busy.Store(false)
		acc, loss, n := e.run(ctx, params, state)
		if ctx.Err() == nil {
			publish(acc, loss, n)
		}
	}()
	return true
}

// newEvaluator returns an evaluator of model on the first heldOut test
// samples of ds, with a network of its own on a CPU backend of its own.
func newEvaluator(model string, mcfg models.Config, meta [][2]string, ds *cli.Data) (*evaluator, error) {
	// The model's file description builds imported graphs too.
	net, err := (&models.File{Model: model, Config: mcfg, Meta: meta}).Net(cpu.NewCPU())
	if err != nil {
		return nil, err
	}
	tr := solver.NewTrainer(net, nil, nil)
	test := firstN{ds.Test, heldOut}
	return &evaluator{run: func(_ context.Context, params, state []float32) (float64, float64, int) {
		net.B.Upload(net.Params, params)
		if len(state) > 0 {
			net.B.Upload(net.State, state)
		}
		net.ParamsChanged()
		acc, loss := tr.Evaluate(test, 500)
		return acc, loss, test.Len()
	}}, nil
}

// snapshot copies the master net's weights (on the driver's goroutine:
// a copy of the parameters, microseconds for the models cotrain trains) and
// offers them for evaluation after iter iterations.
func (e *evaluator) snapshot(ctx context.Context, bus *watch.Bus, net *solver.Net, iter uint64) {
	if e.busy.Load() {
		return
	}
	params := make([]float32, net.Params.Len())
	net.B.Download(params, net.Params)
	var state []float32
	if n := net.State.Len(); n > 0 {
		state = make([]float32, n)
		net.B.Download(state, net.State)
	}
	e.offer(ctx, params, state, func(acc, loss float64, n int) {
		bus.Publish(watch.KindEval, &watch.Eval{Iteration: iter, Samples: n, Loss: loss, Accuracy: acc})
	})
}
