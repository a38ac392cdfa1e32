package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// This file is the simulator's entry point: Run plans a scenario's runs,
// spreads them over the cores and collects their results (report.go
// defines them; run.go is one run).

// plan lists the runs of a scenario: for "solo", one per distinct device
// profile (its first device), in the scenario's order.
func plan(sc *Scenario, policies []string) []runSpec {
	var out []runSpec
	for _, pol := range policies {
		if pol != "solo" && len(sc.DeadlineRules) > 0 {
			for _, rule := range sc.DeadlineRules {
				out = append(out, runSpec{Name: pol + " " + rule + "-deadline", Policy: pol, Deadline: rule})
			}
			continue
		}
		if pol != "solo" {
			out = append(out, runSpec{Name: pol, Policy: pol})
			continue
		}
		var seen []string
		for _, d := range sc.Devices {
			if slices.Contains(seen, d.Profile) {
				continue
			}
			seen = append(seen, d.Profile)
			out = append(out, runSpec{Name: "solo " + d.Name, Policy: "solo", Solo: d.Name})
		}
	}
	return out
}

// Run simulates every run of the scenario on d and returns the report.
// Runs go on in parallel (Options.Parallel), each on its own virtual clock
// and its own cores; the report does not depend on how they interleave.
// The first error (an invariant, a stall, ctx) is returned with the seed
// that reproduces it.
func Run(ctx context.Context, sc *Scenario, d *Data, opt Options) (*Report, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	policies := sc.Policies
	if opt.Policies != nil {
		policies = opt.Policies
	}
	specs := plan(sc, policies)
	// Units of work: the solo runs train identically and share their
	// gradients (see memo), so they go together; every other run alone.
	var units [][]int
	var solo []int
	for i, s := range specs {
		if s.Policy == "solo" {
			solo = append(solo, i)
		} else {
			units = append(units, []int{i})
		}
	}
	if len(solo) > 0 {
		units = append([][]int{solo}, units...)
	}
	par := opt.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	results := make([]*RunResult, len(specs))
	errs := make([]error, len(specs))
	sem := make(chan struct{}, par)
	// The cores are shared by the units running at the moment: each
	// unit's kernels use its share, so that two runs on two cores do not
	// each spin up two threads, and the last one left gets every core.
	var running atomic.Int32
	cores := runtime.GOMAXPROCS(0)
	share := func() int { return max(1, cores/max(1, int(running.Load()))) }
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, unit := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			running.Add(1)
			defer func() {
				running.Add(-1)
				<-sem
			}()
			group := make([]runSpec, len(unit))
			for j, i := range unit {
				group[j] = specs[i]
			}
			res, err := runGroup(ctx, sc, group, d, opt, share)
			if err != nil {
				errs[unit[0]] = err
				cancel()
				return
			}
			for j, i := range unit {
				results[i] = res[j]
			}
		}()
	}
	wg.Wait()
	// The first real error; a cancellation only if nothing else failed.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return &Report{Scenario: sc.Name, Seed: sc.Seed, Runs: results}, nil
}

// runGroup runs specs in lockstep, one iteration at a time each, sharing
// a memo when there are several (they must train identically: solo runs).
// Before each iteration, every runner's kernels are capped at share()
// threads.
func runGroup(ctx context.Context, sc *Scenario, specs []runSpec, d *Data, opt Options, share func() int) ([]*RunResult, error) {
	var m *memo
	if len(specs) > 1 {
		m = newMemo()
	}
	runners := make([]*runner, len(specs))
	for i, spec := range specs {
		r, err := newRunner(ctx, sc, spec, d, opt)
		if err != nil {
			return nil, fmt.Errorf("sim: run %q: %w", spec.Name, err)
		}
		if m != nil && memoizable(r.hubTr.Net) {
			r.memo = m
		}
		runners[i] = r
		r.start()
	}
	live := runners
	for k := 1; len(live) > 0; k++ {
		var next []*runner
		threads := share()
		for _, r := range live {
			r.setThreads(threads)
			if r.advance(k) {
				next = append(next, r)
			} else if r.err != nil {
				break
			}
		}
		live = next
		if m != nil {
			m.evict(uint64(max(k-1, 0)))
		}
	}
	out := make([]*RunResult, len(runners))
	for i, r := range runners {
		res, err := r.result()
		if err != nil {
			return nil, fmt.Errorf("sim: run %q: %w", r.spec.Name, err)
		}
		out[i] = res
	}
	return out, nil
}
