package worker

import (
	"testing"

	"github.com/cotrain/cotrain/internal/purity"
)

// The worker's files, by side. The core (Step, Computed, PartDone, Leave,
// Ready and everything they call) must stay pure: no clock, no network, no
// OS, no goroutine (internal/purity says exactly what is refused). Driver
// code — the pass runner, the connection's driver, the reconnecting
// session — is everything else. A new file goes on one side:
// TestCorePurity fails until it does.
var (
	coreFiles   = []string{"config.go", "core.go", "doc.go", "parts.go", "ready.go"}
	driverFiles = []string{"driver.go", "driver_config.go", "driver_pass.go", "session.go", "battery.go"}
)

// TestCorePurity checks the worker core's files against the purity rules.
func TestCorePurity(t *testing.T) {
	purity.Require(t, ".", coreFiles, nil, driverFiles)
}
