package hub

import (
	"errors"
	"testing"
	"time"
)

// TestDriverConfig: the defaults are valid, a driver's zero fields take
// them, its own values win, and a rule that cannot work is refused.
func TestDriverConfig(t *testing.T) {
	def := DefaultDriverConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if got := (&Driver{Tick: def.Tick}).orDefaults(); got != def {
		t.Errorf("a zero driver runs with %+v, want the defaults %+v", got, def)
	}
	own := (&Driver{Tick: time.Second, QueueLen: 3, DrainTimeout: time.Minute, MaxPending: 2, RegisterTimeout: time.Hour}).orDefaults()
	if own.QueueLen != 3 || own.DrainTimeout != time.Minute || own.MaxPending != 2 || own.RegisterTimeout != time.Hour {
		t.Errorf("a driver's own values lost: %+v", own)
	}
	for _, c := range []struct{ d, tick time.Duration }{{10 * time.Second, 50 * time.Millisecond}, {101 * time.Millisecond, 100 * time.Millisecond}} {
		n := DriverConfig{Tick: c.tick, Deadline: c.d}.DeadlineTicks()
		if time.Duration(n)*c.tick < c.d || time.Duration(n-1)*c.tick >= c.d {
			t.Errorf("deadline %v at tick %v: %d ticks, want the fewest that cover it", c.d, c.tick, n)
		}
	}
	for _, bad := range []func(*DriverConfig){
		func(c *DriverConfig) { c.Tick = 0 },
		func(c *DriverConfig) { c.Deadline = c.Tick / 2 },
		func(c *DriverConfig) { c.QueueLen = 0 },
		func(c *DriverConfig) { c.MaxPending = -1 },
		func(c *DriverConfig) { c.RegisterTimeout = 0 },
		func(c *DriverConfig) { c.DrainTimeout = -time.Second },
	} {
		c := def
		bad(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
}
