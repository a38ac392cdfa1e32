package peer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/sync/p2p"
)

// TestNewHost: a host started twice with the same identity file has the
// same peer id (a restarted hub keeps it), without one a new id each time,
// and an unreadable key file is an error naming it.
func TestNewHost(t *testing.T) {
	dir := t.TempDir()
	id := filepath.Join(dir, "id.key")
	cfg := p2p.HostConfig{Listen: []string{"/ip4/127.0.0.1/tcp/0"}}
	ids := map[string]int{}
	for _, path := range []string{id, id, "", ""} {
		h, err := NewHost(context.Background(), cfg, path, "")
		if err != nil {
			t.Fatal(err)
		}
		ids[h.ID()]++
		h.Close()
	}
	if len(ids) != 3 {
		t.Errorf("peer ids %v: want the file's twice and two fresh ones", ids)
	}
	bad := filepath.Join(dir, "swarm.key")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewHost(context.Background(), cfg, "", bad); err == nil {
		t.Error("a malformed swarm.key was accepted")
	}
}
