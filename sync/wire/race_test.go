//go:build race

package wire

// raceEnabled says the tests run under the race detector, which adds
// allocations of its own to what testing.AllocsPerRun counts.
const raceEnabled = true
