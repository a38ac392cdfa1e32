package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/sync/p2p"
	"github.com/libp2p/go-libp2p/core/pnet"
)

// TestKeygen: the key is libp2p's swarm.key (pnet reads it), mode 0600,
// new each time; an existing file is kept unless --force.
func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "swarm.key")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"keygen", "--out", path}, &out, &errb); err != nil {
		t.Fatalf("keygen: %v %s", err, errb.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "/key/swarm/psk/1.0.0/\n/base16/\n") {
		t.Fatalf("key file %q is not a swarm.key", b)
	}
	psk, err := pnet.DecodeV1PSK(bytes.NewReader(b)) // libp2p's own reader
	if err != nil || len(psk) != p2p.PSKSize {
		t.Fatalf("libp2p reads %d bytes, %v", len(psk), err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	if err := run(context.Background(), []string{"keygen", "--out", path}, &out, &errb); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("overwrite without --force: %v", err)
	}
	if err := run(context.Background(), []string{"keygen", "--out", path, "--force"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	again, err := p2p.LoadPSK(path)
	if err != nil || bytes.Equal(again, psk) {
		t.Fatalf("--force kept the old key (or: %v)", err)
	}
	if err := run(context.Background(), []string{"keygen", "extra"}, &out, &errb); !errors.Is(err, errUsage) {
		t.Fatalf("stray argument: %v, want a usage error", err)
	}
}
