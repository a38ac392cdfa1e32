// Package peer is the libp2p host set-up cmd/hub and cmd/worker share: the
// identity and the private network's key from their flags, then the host.
// It is a package of its own, not part of cmd/internal/cli, so that the
// commands without a network (cotrain, sim) do not link libp2p.
package peer

import (
	"context"

	"github.com/cotrain/cotrain/sync/p2p"
)

// NewHost starts a libp2p host with cfg, whose Identity and PSK it fills
// first: the identity from the key file at identity (created if missing;
// empty: a new identity for this run), the private network's key from the
// swarm.key file at psk (empty: none). Errors name the file.
func NewHost(ctx context.Context, cfg p2p.HostConfig, identity, psk string) (*p2p.Host, error) {
	var err error
	if identity != "" {
		if cfg.Identity, err = p2p.LoadOrCreateIdentity(identity); err != nil {
			return nil, err
		}
	}
	if psk != "" {
		if cfg.PSK, err = p2p.LoadPSK(psk); err != nil {
			return nil, err
		}
	}
	return p2p.NewHost(ctx, cfg)
}
