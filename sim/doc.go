// Package sim is the simulator: it runs the real hub and worker cores, with
// real gradients, on a virtual clock, with phones and Wi-Fi described as
// data. A Scenario (a small text file: sim/scenarios/ holds the built-in
// ones; docs/simulator.md lists the keys) names the model and data, the
// devices and their profiles (compute speed, from Profiles), the network
// (bandwidth, latency, a shared medium, loss), faults, and the runs to
// compare: each device alone ("solo") and co-training policies. Every
// random choice of a run derives from the scenario's seed, so a run
// repeats bit for bit, and a failing run's error names the seed that
// reproduces it. After every step the simulator checks its invariants
// (ErrInvariant): each merged update is the sample-weighted mean of the
// pushes the hub accepted, and every worker holds, bit for bit, the
// weights the hub had after the same step.
//
// Caller's duties:
//  1. Get a Scenario: LoadScenario (a built-in name from BuiltinScenarios,
//     or a file) or ParseScenario (any io.Reader).
//  2. Adjust it if need be (Seed, Policies, Primary, SetBandwidth,
//     Compression, Overlap) and call Validate, which Run also calls: an
//     error wraps ErrScenario and says which key is wrong.
//  3. Load its data once with LoadData (MNIST as data.FindMNIST finds it,
//     or a seeded synthetic set); the Data is read-only and shared by every
//     run.
//  4. Call Run with Options: Parallel bounds the runs that go on at once
//     (each run is deterministic on its own virtual clock, so the report
//     does not depend on it), Iterations caps every run, Progress
//     and Init, when set, are called from several runs at once and must be
//     safe for concurrent use.
//  5. Read the Report: one RunResult per run (Report.Run by name,
//     FastestSolo), each with its simulated times, accuracy curve, bytes
//     and per-device timeline. cmd/sim turns it into the table, the plots
//     and the static dashboard.
package sim
