// Package hub is the hub's side of cooperative training: a pure protocol
// core that runs the barrier, merges the workers' gradients, asks its
// driver for the optimizer step on the master network, and sizes every
// worker's batch.
//
// The core never touches a socket, a goroutine, a clock or the model (the
// etcd-io/raft pattern). It has six inputs — Step(from, message), Tick(),
// Leave(id), Stop(reason), ObserveComm(id, nanos) and Applied(ApplyDone),
// the report of a step it asked for — and one output, Ready(): the step to
// take (ApplyRequest), messages to send, events to log, and whether the run
// is over (ready.go). It reads the master's weights through a Snapshotter
// (for the Welcomes, ResyncAnswers and Goodbyes it writes) and writes them
// only through ApplyRequests, as the worker core hands its passes out as
// ComputeRequests. The libp2p driver and the simulator call the very same
// core. Which files are the core is listed in purity_test.go, and
// TestCorePurity fails if one of them imports time (but for durations in
// config.go), context, net, os or sync, or a package of this module other
// than sync/wire, sync/compress and hub/internal/avg (so no solver, gpu,
// models or sync/state), or starts a goroutine; driver.go,
// driver_config.go, master.go (the model's side: NewCore, Apply) and
// observe.go are the driver. The stopping rule (stop.go) is pure too, for
// the drivers to apply.
//
// Caller's duties:
//  1. Build the master network (models.Build, then InitParams or a weight
//     file), its optimizer and schedule in a solver.Trainer, and call
//     NewCore with a validated Config and a Model holding the trainer. The
//     trainer is the caller's from then on, but only the core's
//     ApplyRequests may change it during the run.
//  2. For every message a worker sends, call Step with the peer id the
//     transport authenticated (never the message's Header.Sender). Log the
//     error it returns; the input has been dropped whole. Hand over a
//     message of your own and leave an accepted Push's Gradient untouched
//     until its iteration closes: the core reads it there, without a copy
//     (the transports' Recv and the simulator's links give fresh messages).
//  3. Call Tick at a steady period (Config.Tick); the barrier deadline is
//     counted in ticks from the iteration's start.
//  4. Call Leave when a worker's connection drops.
//  5. After every input, take Ready(). If its Apply is set, take that step
//     on the trainer (Apply does it) and report it with Applied before
//     anything else (ApplyPending does both); the core panics on any other
//     input while a step is out. Then take Ready() again: send each
//     Envelope's message to its peer in order, log the events, then call
//     Advance. Do not modify the messages: one Merged is shared by every
//     envelope that carries it.
//  6. When Ready().Done, flush the messages and shut down. Call Stop to end
//     a run early (the driver's own stopping rule, or the user).
//  7. Read the trainer (to save a checkpoint) only between inputs, with no
//     step out. The core is not safe for concurrent use.
//
// # Iterations
//
// Iteration k is the one whose step takes the master trainer from Iter k to
// k+1; every message carries it. When iteration k opens, each member is told
// its batch size: in a Welcome (first start, reopen) or in Merged k-1's
// BatchSizes. The barrier closes when every member has pushed, or at k's
// deadline: members that missed it are marked late. The deadline is
// DeadlineTicks, or with DeadlineFactor a multiple of the slowest member's
// measured iteration time in ticks, within DeadlineFloorTicks and
// DeadlineTicks (deadline.go). The merged gradient
// is Σ bᵢgᵢ / Σ bᵢ over the pushes that arrived (bᵢ = Push.Samples), summed
// in float64 in worker-id order, so it equals the mean gradient of the
// union batch and does not depend on arrival order. The core asks its
// driver to upload it to the master's Net.Grads and call Trainer.Apply —
// the step every worker takes — (ApplyRequest), and once the driver reports
// the step (Applied, with the learning rate it took and the weights' hash)
// sends Merged{k, gradient, next batch sizes, SHA-256 of its weights after
// the step, learning rate} to every worker that holds the state of k. A late
// worker gets a ResyncAnswer (the state after the step) instead and takes
// part again from k+2, after it has applied Merged k+1 like a newcomer. A
// deadline with no push applies nothing and reopens k with a Welcome to
// every live worker. A worker that misses MaxMisses deadlines in a row is
// dropped with a Goodbye.
//
// Pushes are refused (sentinel errors, weights untouched) when they come
// from an unregistered peer, for another iteration (ErrStale, ErrFuture),
// from a worker not in the barrier (ErrNotMember: it joined or resynced
// after the iteration opened, or was late), twice (ErrDuplicate), with a
// sample count outside 1..its batch or a negative time (ErrBadSamples), a
// gradient of the wrong length (ErrBadLength), or a NaN or infinity
// (ErrNonFinite). A Register from a peer off Config.Allow is answered with
// Reject{Code: wire.CodeAuth} and refused (ErrNotAllowed); one beyond
// MaxWorkers with Reject{Code: wire.CodeFull} (ErrFull); when Model.Meta
// names the classes, one whose Register.Classes differ with
// Reject{Code: wire.CodeClasses} naming the missing and extra classes
// (ErrClasses).
//
// # Batch sizes and parking
//
// Config.Batch chooses how the global batch is split among the members of
// an iteration: Fixed gives equal shares (SplitEqual); Adaptive splits it so
// that the workers finish together as nearly as whole samples allow, from
// each worker's throughput (SplitThroughput), the samples per
// second it reports in every Push (compute time over samples), smoothed by
// an exponential moving average (Config.Smoothing) and re-estimated every
// iteration, so a phone that throttles or speeds up gets a new share at the
// next iteration. A worker with no measurement yet gets a share from the
// speed it declared at Register, or the mean of the others.
//
// With Config.Park, the hub also weighs what each worker brings against
// what its communication costs: the driver reports how long a worker's push
// took (ObserveComm), and a worker whose removal lowers the predicted time
// per sample by more than Config.ParkMargin is parked: it gets batch 0,
// keeps receiving Merged (so its weights stay current and it can come back
// at any iteration), and an EventWorkerParked says why, with its figures.
// Every iteration the choice is made again; a parked worker is taken back
// (EventWorkerResumed) when its figures say it pays again. park.go holds
// the model and its limits.
//
// Two more rules spare phones. Config.BatteryFloor parks a worker whose
// battery, as it reports it (Register, Push, or a Status between pushes),
// is discharging below the floor, under any policy, and the run waits when
// every worker is (battery.go). The Energy policy lets an iteration take up
// to Config.EnergySlack times the adaptive one's time and gives the most
// samples to the workers whose samples cost their batteries least, by the
// power they declared at registration (energy.go).
//
// # States
//
// The run:
//
//	waiting ──(MinWorkers registered: Welcome with batches)──► open(k)
//	open(k) ──(all members pushed, or deadline with pushes)──► stepping(k)
//	         ApplyRequest k; no input but Applied until the step is taken
//	stepping(k) ──(Applied k)──► open(k+1)
//	         Merged k to holders of state k, ResyncAnswer to the late
//	open(k) ──(deadline, no push; or no member left, nothing pushed)──► open(k)
//	         Welcome with new batches to every live worker
//	open(k) ──(no worker left)──► parked(k) ──(Register)──► open(k)
//	stepping(k) ──(Applied k, k+1 reaches Iterations: Merged, then Goodbye)──► done
//	open(k) ──(Stop)──► done
//
// A worker, as the hub sees it:
//
//	waiting ──(start)──► member(k)
//	Register while open(k) ──► idle(k): Welcome with batch 0, gets Merged k
//	idle(k) ──(Merged k with its batch)──► member(k+1)
//	member(k) ──(pushed, barrier closes)──► member(k+1)
//	member(k) ──(deadline missed: ResyncAnswer at k+1)──► idle(k+1)
//	member(k) ──(ResyncRequest before pushing: ResyncAnswer at k)──► idle(k)
//	any ──(Leave, Goodbye, Reject, MaxMisses)──► gone
//
// # Determinism
//
// Identical inputs give bit-identical weights on the same architecture: the
// merge has a fixed order and the optimizer steps run in the CPU backend's
// SGDStep and AdamStep (gpu/cpu). Across architectures they may not: Go may fuse a
// multiply-add into one FMA instruction on arm64 (most phones) but not on
// amd64, so a phone and a laptop can round one step differently. That is
// what the hash in every Merged is for: a worker whose weights drift asks
// for the state again (ResyncRequest) and continues from the hub's copy.
package hub
