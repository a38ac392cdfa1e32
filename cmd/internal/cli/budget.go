package cli

import (
	"fmt"

	"github.com/cotrain/cotrain/solver"
)

// MemoryBudgetUsage is the help of the commands' --memory-budget flag.
const MemoryBudgetUsage = "fit each training step in this much memory, e.g. 1GiB or 512MiB (on the CPU the process's resident memory, " +
	"on OpenCL the device's allocations) by recomputing activations during the backward pass where keeping them does not fit: " +
	"the same weights bit for bit, more time per step; refused with the smallest budget for the batch and the largest batch " +
	"for the budget when even recomputing everything does not fit (empty or 0: no limit)"

// FitMemory plans net's training steps of batch samples to fit budget
// bytes (solver.Net.SetMemoryBudget), of which outside are taken by what
// the process holds beside the step (the runtime, the program, the data:
// the caller measures it). Counted with the net: opt's state and the
// host's copy of a batch, which the loader fills before each upload.
// A budget of 0 leaves the net without one.
func FitMemory(net *solver.Net, opt solver.Optimizer, budget, outside int64, batch int) (solver.StepMemory, error) {
	extra := solver.OptimizerBytes(opt) + 4*int64(batch)*int64(net.In.Size()+1)
	if budget <= 0 {
		return net.SetMemoryBudget(0, batch, extra)
	}
	m, err := net.SetMemoryBudget(budget-outside, batch, extra)
	if err != nil {
		return m, fmt.Errorf("%w (%s of the %s are taken outside the training step)", err, solver.FormatBytes(outside), solver.FormatBytes(budget))
	}
	return m, nil
}

// DescribeMemory is FitMemory's result for a person: "estimate 980.2 MiB
// for a step of 32 samples, 45 layers recomputed in 6 segments".
func DescribeMemory(m solver.StepMemory) string {
	s := fmt.Sprintf("estimate %.1f MiB for a step of %d samples", float64(m.Total)/(1<<20), m.Batch)
	if m.Replayed == 0 {
		return s + ", nothing recomputed"
	}
	return s + fmt.Sprintf(", %d layers recomputed in %d segments", m.Replayed, m.Segments)
}
