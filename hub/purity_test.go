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
	coreFiles   = []string{"barrier.go", "batch.go", "battery.go", "energy.go", "config.go", "core.go", "doc.go", "iteration.go", "park.go", "parts.go", "ready.go", "register.go", "stop.go", "deadline.go"}
	driverFiles = []string{"driver.go", "driver_config.go", "master.go", "observe.go"}
	// coreImports are the project's packages the core may import: the wire
	// format, the codecs and the averaging kernels. The model, the engine
	// and the backends (models, solver, gpu, sync/state) are the driver's
	// (master.go): the core asks for each optimizer step with an
	// ApplyRequest and reads the weights through a Snapshotter.
	coreImports = []string{"github.com/cotrain/cotrain/sync/wire", "github.com/cotrain/cotrain/sync/compress",
		"github.com/cotrain/cotrain/hub/internal/avg"}
	avgFiles = []string{"avg.go", "avg_amd64.go", "avg_other.go"}
)

// TestCorePurity checks the hub core's files, and the averaging kernels
// of internal/avg that the merge calls, against the purity rules, and that
// the core imports none of the project's packages but coreImports.
func TestCorePurity(t *testing.T) {
	purity.Require(t, ".", coreFiles, []string{"config.go"}, driverFiles)
	purity.Require(t, "internal/avg", avgFiles, nil, nil)
	vs, err := purity.Imports(".", coreFiles, "github.com/cotrain/cotrain/", coreImports)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}
