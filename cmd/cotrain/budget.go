package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/solver"
)

// budgetMargin is what a CPU budget leaves to the Go runtime beyond what
// the planner counts (its own structures, heap fragmentation, the goroutine
// stacks of the worker pool, pages the collector has not yet returned): a
// fixed part and a share of the budget.
const (
	budgetMarginFixed = 24 << 20
	budgetMarginShare = 0.03
	// deviceMarginShare is what a device budget leaves to the backend's
	// own buffers that the planner does not count (staging, its kernels'
	// scratch): a share of the budget.
	deviceMarginShare = 0.02
)

// fitBudget applies --memory-budget (spec, as cli.ParseBytes reads it) to
// net's training steps of batch samples with optimizer opt, and returns the
// planner's estimate and the budget in bytes (0: none). On a backend that counts
// its device allocations (OpenCL) the budget is for those, and what is
// already allocated beyond the net and the optimizer (the kernels' tables)
// and a margin for the backend's own scratch are deducted. On the CPU it
// is for the process's resident memory: the Go collector is given the
// budget as its soft limit (debug.SetMemoryLimit), so that garbage is
// collected before the process passes it, the garbage so far is returned
// to the system, and the resident memory then beyond the parameters and
// state (the program, the runtime, the data) and a margin for the runtime
// are deducted.
func fitBudget(b gpu.Backend, net *solver.Net, opt solver.Optimizer, spec string, batch int) (solver.StepMemory, int64, error) {
	budget, err := cli.ParseBytes(spec)
	if err != nil {
		return solver.StepMemory{}, 0, fmt.Errorf("%w: --memory-budget: %v", errUsage, err)
	}
	if budget == 0 {
		return solver.StepMemory{}, 0, nil
	}
	weights := net.StepMemory(batch, 0).Weights
	var outside int64
	if live, _, ok := gpu.DeviceBytes(b); ok {
		outside = max(live-weights-solver.OptimizerBytes(opt), 0) + int64(deviceMarginShare*float64(budget))
	} else {
		resident := 4 * int64(net.Params.Len()+net.State.Len())
		debug.SetMemoryLimit(budget)
		debug.FreeOSMemory() // the garbage of loading the model and the data goes first
		outside = max(residentNow()-resident, 0) + budgetMarginFixed + int64(budgetMarginShare*float64(budget))
	}
	m, err := cli.FitMemory(net, opt, budget, outside, batch)
	return m, budget, err
}

// residentNow is the process's resident memory in bytes: /proc/self/statm's
// resident pages where Linux (and Android) has it, else the peak so far
// (getrusage), which is at least as much.
func residentNow() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err == nil {
		var size, res int64
		if _, err := fmt.Sscan(string(b), &size, &res); err == nil {
			return res * int64(os.Getpagesize())
		}
	}
	return peakRSS()
}
