package p2p

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/pnet"
)

// An identity file holds one private key in libp2p's protobuf encoding
// (crypto.MarshalPrivateKey), the same bytes go-libp2p and kubo tools use,
// so a key can be inspected or moved with them. It is written with mode
// 0600: whoever reads it can impersonate the worker.

// GenerateIdentity returns a new Ed25519 identity drawn from r (pass
// crypto/rand.Reader outside tests).
func GenerateIdentity(r io.Reader) (crypto.PrivKey, error) {
	priv, _, err := crypto.GenerateEd25519Key(r)
	if err != nil {
		return nil, fmt.Errorf("p2p: generating an Ed25519 identity: %w", err)
	}
	return priv, nil
}

// SaveIdentity writes k to path with mode 0600, atomically: it writes a
// temporary file in the same folder and renames it, so a crash never leaves
// a truncated key behind.
func SaveIdentity(path string, k crypto.PrivKey) error {
	b, err := crypto.MarshalPrivateKey(k)
	if err != nil {
		return fmt.Errorf("p2p: encoding identity: %w", err)
	}
	return writeFileAtomic(path, b, 0o600)
}

// LoadIdentity reads a key written by SaveIdentity.
func LoadIdentity(path string) (crypto.PrivKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("p2p: reading identity: %w", err)
	}
	k, err := crypto.UnmarshalPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("p2p: identity file %s is not a libp2p private key: %w", path, err)
	}
	return k, nil
}

// LoadOrCreateIdentity returns the key stored at path, creating a new
// Ed25519 key there (and the folders leading to it) when no file exists. A
// worker that calls it at every start keeps its peer ID across restarts.
// A file that exists but cannot be read or decoded is an error, never
// silently replaced: that would change the worker's identity.
func LoadOrCreateIdentity(path string) (crypto.PrivKey, error) {
	k, err := LoadIdentity(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if k, err = GenerateIdentity(rand.Reader); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("p2p: creating identity folder: %w", err)
	}
	if err := SaveIdentity(path, k); err != nil {
		return nil, err
	}
	return k, nil
}

// PSKSize is the size of a private-network key in bytes.
const PSKSize = 32

// GeneratePSK returns a new private-network key drawn from r.
func GeneratePSK(r io.Reader) ([]byte, error) {
	psk := make([]byte, PSKSize)
	if _, err := io.ReadFull(r, psk); err != nil {
		return nil, fmt.Errorf("p2p: generating a private-network key: %w", err)
	}
	return psk, nil
}

// EncodePSK returns psk in the swarm.key format that DecodePSK and the
// other libp2p implementations read (V1, base16):
//
//	/key/swarm/psk/1.0.0/
//	/base16/
//	<64 hex digits>
func EncodePSK(psk []byte) ([]byte, error) {
	if len(psk) != PSKSize {
		return nil, fmt.Errorf("p2p: a private-network key has %d bytes, want %d", len(psk), PSKSize)
	}
	return fmt.Appendf(nil, "/key/swarm/psk/1.0.0/\n/base16/\n%s\n", hex.EncodeToString(psk)), nil
}

// DecodePSK reads a swarm.key (libp2p's V1 format, in base16, base64 or
// bin encoding) and returns the 32-byte key.
func DecodePSK(b []byte) ([]byte, error) {
	psk, err := pnet.DecodeV1PSK(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("p2p: decoding swarm key: %w", err)
	}
	return psk, nil
}

// LoadPSK reads the swarm.key file at path (see DecodePSK).
func LoadPSK(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("p2p: reading swarm key: %w", err)
	}
	psk, err := DecodePSK(b)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return psk, nil
}

// SavePSK writes psk to path in the swarm.key format, mode 0600.
func SavePSK(path string, psk []byte) error {
	b, err := EncodePSK(psk)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b, 0o600)
}

// writeFileAtomic writes b to a temporary file next to path, syncs it and
// renames it over path.
func writeFileAtomic(path string, b []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("p2p: writing %s: %w", path, err)
	}
	tmp := f.Name()
	err = errors.Join(f.Chmod(perm), write(f, b), f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("p2p: writing %s: %w", path, err)
	}
	return nil
}

func write(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}
