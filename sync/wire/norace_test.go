//go:build !race

package wire

// raceEnabled says the tests run under the race detector (race_test.go).
const raceEnabled = false
