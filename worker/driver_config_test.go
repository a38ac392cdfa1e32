package worker

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestNextDial: the waits are Backoff's, drawn in order from the same
// generator, and the rule gives up exactly when the next dial would come
// after ReconnectTimeout.
func TestNextDial(t *testing.T) {
	c := DefaultDriverConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	a, b := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	elapsed := time.Duration(0)
	attempt := 0
	for ; ; attempt++ {
		wait, ok := c.NextDial(attempt, elapsed, a)
		if want := c.Backoff.Wait(attempt, b); wait != want {
			t.Fatalf("attempt %d waits %v, want Backoff's %v", attempt, wait, want)
		}
		if !ok {
			if elapsed+wait <= c.ReconnectTimeout {
				t.Fatalf("gave up at attempt %d with the dial due at %v, within %v", attempt, elapsed+wait, c.ReconnectTimeout)
			}
			break
		}
		elapsed += wait
	}
	if attempt < 20 || elapsed > c.ReconnectTimeout {
		t.Errorf("gave up after %d dials spanning %v, want dozens within %v", attempt, elapsed, c.ReconnectTimeout)
	}
	if _, ok := (DriverConfig{Backoff: c.Backoff}).NextDial(0, 0, a); ok {
		t.Error("ReconnectTimeout 0 dialled again")
	}
	if err := (DriverConfig{Backoff: Backoff{}, ReconnectTimeout: time.Second}).Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("an empty backoff: %v, want ErrConfig", err)
	}
	if err := (DriverConfig{ReconnectTimeout: -1}).Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("a negative timeout: %v, want ErrConfig", err)
	}
}
