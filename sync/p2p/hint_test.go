package p2p

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// TestConnectHintDescriptors: a dial that fails for want of file
// descriptors says so instead of blaming the swarm key (issue 28: 190 idle
// dashboard connections under ulimit -n 200 stopped a worker with the
// right key, and its error asked whether it held the same key).
func TestConnectHintDescriptors(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("dial tcp4 10.0.0.2:4001: %w", syscall.EMFILE),
		fmt.Errorf("failed to dial: socket: too many open files"),
	} {
		h := connectHint(err, true)
		if !strings.Contains(h, "file descriptors") || strings.Contains(h, "same swarm key") {
			t.Errorf("%v: hint %q", err, h)
		}
	}
	// A failed handshake names both causes it may have.
	h := connectHint(fmt.Errorf("failed to negotiate security protocol: EOF"), true)
	if !strings.Contains(h, "same swarm key") || !strings.Contains(h, "too many open files") {
		t.Errorf("handshake hint %q", h)
	}
}
