package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/cotrain/cotrain/sync/p2p"
)

// runKeygen writes a new private-network key: a swarm.key in libp2p's V1
// format (the one IPFS private networks use), mode 0600. Give the file to
// the hub and to every worker with --psk. It refuses to overwrite a key,
// since replacing one locks out every worker that holds the old.
func runKeygen(_ context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newFlags("cotrain keygen", stderr, "cotrain keygen [--out swarm.key] [--force]",
		"Writes a new private-network key for hub --psk and worker --psk: only peers holding the same key can connect.")
	out := flags.String("out", "swarm.key", "file to write the key to")
	force := flags.Bool("force", false, "overwrite an existing file")
	if err := parse(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("%w: keygen: unexpected arguments %q", errUsage, flags.Args())
	}
	if _, err := os.Stat(*out); err == nil && !*force {
		return fmt.Errorf("keygen: %s exists; pass --force to replace it (workers holding the old key will be locked out)", *out)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keygen: %w", err)
	}
	psk, err := p2p.GeneratePSK(rand.Reader)
	if err != nil {
		return err
	}
	if err := p2p.SavePSK(*out, psk); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a new swarm key to %s: start the hub and every worker with --psk %s\n", *out, *out)
	return nil
}
