package hub_test

import (
	"fmt"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/wire"
)

// testCore is a hub core driven as the Driver and the simulator drive it:
// after every input, the step its Ready asks for runs at once on the master
// trainer (hub.ApplyPending), so a test reads the Ready that follows, and
// the trainer, as a driver would.
type testCore struct {
	*hub.Core
	tr *solver.Trainer
}

// newTestCore is hub.NewCore for a testCore.
func newTestCore(cfg hub.Config, m hub.Model) (*testCore, error) {
	c, err := hub.NewCore(cfg, m)
	if err != nil {
		return nil, err
	}
	return &testCore{Core: c, tr: m.Trainer}, nil
}

// Trainer returns the master trainer.
func (c *testCore) Trainer() *solver.Trainer { return c.tr }

// apply runs the step the core asks for, if any. A step that cannot be
// taken is a bug of the hub package: the test panics.
func (c *testCore) apply() {
	if err := hub.ApplyPending(c.Core, c.tr); err != nil {
		panic(fmt.Sprintf("hub test: %v", err))
	}
}

func (c *testCore) Step(from string, m wire.Message) error {
	err := c.Core.Step(from, m)
	c.apply()
	return err
}

func (c *testCore) Tick() { c.Core.Tick(); c.apply() }

func (c *testCore) Leave(id string) { c.Core.Leave(id); c.apply() }

func (c *testCore) Stop(reason string) { c.Core.Stop(reason); c.apply() }
