// Package worker is a worker's side of cooperative training: a pure
// protocol core that joins the hub, asks its driver for gradients, pushes
// them, applies the hub's merged steps and keeps its weights identical to
// the hub's.
//
// The core never touches a socket, a goroutine, a clock or the training
// data (TestCorePurity checks the core's files, listed in purity_test.go:
// none imports time, context, net, os or sync, or starts a goroutine; the
// driver code is driver.go, driver_config.go, driver_pass.go and session.go).
// Its inputs are Step(from, message) for the hub's messages and
// Computed(ComputeDone) for a finished forward/backward pass (a local
// input, so it has its own method: wire.Message is a closed set). Its
// output is Ready(): messages for the hub, at most one ComputeRequest,
// events to log, and whether the session is over.
//
// Caller's duties:
//  1. NewCore with a Config naming the hub's peer id and a backend of its
//     own (the model is built on it when the Welcome comes). The first
//     Ready holds the Register: send it.
//  2. For every message from the hub, call Step with the peer id the
//     transport authenticated.
//  3. After every input, take Ready(): send its Messages to the hub in
//     order, log its events, start its Compute if any, then call Advance.
//  4. For a ComputeRequest{Iteration, Batch}: set the loader's batch to
//     Batch, take the next batch (an epoch's last may be shorter), call
//     Trainer().Gradient on it, measure the time it took, and report
//     Computed(ComputeDone{Iteration, Samples, Loss, ComputeNanos}). The
//     pass may run on another goroutine: until Computed, the core does not
//     touch the network (it holds the hub's messages that would) — but all
//     calls into the core must still come from one goroutine.
//     With layer-wise overlap (ComputeRequest.Parts has several offsets),
//     the driver may also report each part as the backward pass finishes
//     it (solver.Net.OnGradsDone), last first, with PartDone, downloading
//     the part on the pass's goroutine and passing the values along; its
//     Push goes out at once. Computed, still last, pushes the rest.
//  5. When Ready().Done, the session is over: Final() holds the hub's final
//     weights (Goodbye) or Err() says why the hub refused (Reject).
//  6. To leave early (the user stopped the worker), call Leave and send the
//     Goodbye it queues, so the hub forgets the worker at once.
//  7. To report the phone's battery (optional), read it before NewCore
//     into Config.Battery (the Register carries it), then call SetBattery
//     with every new reading: pushes carry the latest, and a change goes to
//     the hub as a Status in the next Ready. PowerSupply reads Linux and
//     Android sysfs; Driver does this every BatteryEvery.
//
// Driver runs one core over one connection; Session runs a worker across
// connections: when the hub's connection drops before its Goodbye, it dials
// again with exponential backoff and jitter (Backoff) and registers with a
// fresh Core, which the hub's Welcome brings to the current state.
//
// # States
//
//	joining ──(Welcome, batch b>0)──► computing(k) ──(Computed)──► pushed(k)
//	joining ──(Welcome, batch 0)──► idle(k)
//	pushed(k), idle(k) ──(Merged k, hash equal, batch b>0)──► computing(k+1)
//	pushed(k), idle(k) ──(Merged k, hash equal, no batch)──► idle(k+1)
//	pushed(k), idle(k) ──(Merged k, hash differs; Merged j>k; malformed)──► resyncing
//	computing(k) ──(Computed; a Merged ≥k, Welcome or ResyncAnswer is held)──► idle(k), no push
//	resyncing ──(Merged: dropped)──► resyncing
//	any but joining ──(ResyncAnswer at j)──► idle(j)
//	any ──(Welcome at j, batch b)──► computing(j) or idle(j)
//	any ──(Goodbye or Reject)──► done
//
// The learning rate of every step is the one the Merged carries: the
// worker's trainer has no schedule of its own, so it cannot disagree with
// the hub about it. After each step the core hashes its weights (SHA-256 of
// the little-endian float32 bytes, sync/state.Hash) and compares with the
// hub's: a mismatch (a lost message, or a phone whose arithmetic fused a
// multiply-add the hub's did not; see the hub package) is counted
// (Mismatches), logged, and answered with a ResyncRequest.
package worker
