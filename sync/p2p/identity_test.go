package p2p

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// TestLoadOrCreateIdentity checks that a worker keeps its peer id across
// restarts, and that a damaged key file is refused, never replaced.
func TestLoadOrCreateIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "identity.key")
	first, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", st.Mode().Perm())
	}
	if first.Type() != crypto.Ed25519 {
		t.Errorf("key type %v, want Ed25519", first.Type())
	}
	again, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !first.Equals(again) {
		t.Fatal("the second call returned another key")
	}
	h1 := newTestHost(t, HostConfig{Identity: first})
	h2 := newTestHost(t, HostConfig{Identity: again})
	if h1.ID() != h2.ID() {
		t.Errorf("hosts of the same key have ids %s and %s", h1.ID(), h2.ID())
	}

	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateIdentity(path); err == nil || !strings.HasPrefix(err.Error(), "p2p: ") {
		t.Fatalf("a damaged key file: err = %v, want a p2p error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "not a key" {
		t.Error("the damaged key file was overwritten")
	}
	if _, err := LoadIdentity(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadIdentity of a missing file = %v, want fs.ErrNotExist", err)
	}
}

func TestPSKFile(t *testing.T) {
	psk, err := GeneratePSK(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "swarm.key")
	if err := SavePSK(path, psk); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPSK(path)
	if err != nil {
		t.Fatalf("LoadPSK: %v", err)
	}
	if string(got) != string(psk) {
		t.Fatalf("LoadPSK = %x, want %x", got, psk)
	}

	const hexKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name, file string
		ok         bool
	}{
		{"base16", "/key/swarm/psk/1.0.0/\n/base16/\n" + hexKey + "\n", true},
		{"base16, CRLF", "/key/swarm/psk/1.0.0/\r\n/base16/\r\n" + hexKey, true},
		{"base64", "/key/swarm/psk/1.0.0/\n/base64/\nASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4mrze8=\n", true},
		{"wrong header", "/key/swarm/psk/2.0.0/\n/base16/\n" + hexKey, false},
		{"unknown encoding", "/key/swarm/psk/1.0.0/\n/base58/\n" + hexKey, false},
		{"short key", "/key/swarm/psk/1.0.0/\n/base16/\n0123", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			psk, err := DecodePSK([]byte(tc.file))
			if !tc.ok {
				if err == nil || !strings.HasPrefix(err.Error(), "p2p: ") {
					t.Fatalf("DecodePSK = %x, %v; want a p2p error", psk, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodePSK: %v", err)
			}
			if got := string(mustEncode(t, psk)); !strings.Contains(got, hexKey) {
				t.Errorf("key %x, want %s", psk, hexKey)
			}
		})
	}
	if _, err := EncodePSK(psk[:31]); err == nil {
		t.Error("EncodePSK accepted a 31-byte key")
	}
	// A host accepts a key read from a file.
	h, err := NewHost(context.Background(), HostConfig{Listen: []string{"/ip4/127.0.0.1/tcp/0"}, PSK: got})
	if err != nil {
		t.Fatalf("NewHost with a loaded PSK: %v", err)
	}
	h.Close()
}

func mustEncode(t *testing.T, psk []byte) []byte {
	t.Helper()
	b, err := EncodePSK(psk)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodePSK feeds arbitrary bytes to the swarm.key reader: no panic, and
// an accepted key is 32 bytes that encode back to a key that decodes the same.
func FuzzDecodePSK(f *testing.F) {
	psk := make([]byte, 32)
	for i := range psk {
		psk[i] = byte(i * 7)
	}
	good, err := EncodePSK(psk)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("/key/swarm/psk/1.0.0/\n/base16/\nzz\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodePSK(b)
		if err != nil {
			return
		}
		if len(k) != 32 {
			t.Fatalf("accepted a %d-byte key", len(k))
		}
		enc, err := EncodePSK(k)
		if err != nil {
			t.Fatal(err)
		}
		k2, err := DecodePSK(enc)
		if err != nil || string(k2) != string(k) {
			t.Fatalf("key does not round-trip: %v", err)
		}
	})
}
