package hub

import (
	"testing"

	"github.com/cotrain/cotrain/internal/purity"
)

// The hub's files, by side. The core (Step, Tick, Leave, Stop, Ready and
// everything they call) must stay pure: no clock, no network, no OS, no
// goroutine (internal/purity says exactly what is refused); config.go may
// name time.Duration for Config.Tick, a length the core only reports.
// Driver code (goroutines, timers, the transport) is everything else.
// A new file goes on one side: TestCorePurity fails until it does.
var (
	coreFiles   = []string{"barrier.go", "batch.go", "config.go", "core.go", "doc.go", "iteration.go", "park.go", "parts.go", "ready.go", "register.go", "stop.go", "deadline.go"}
	driverFiles = []string{"driver.go", "driver_config.go", "observe.go"}
	avgFiles    = []string{"avg.go", "avg_amd64.go", "avg_other.go"}
)

// TestCorePurity checks the hub core's files, and the averaging kernels
// of internal/avg that the merge calls, against the purity rules.
func TestCorePurity(t *testing.T) {
	purity.Require(t, ".", coreFiles, []string{"config.go"}, driverFiles)
	purity.Require(t, "internal/avg", avgFiles, nil, nil)
}
