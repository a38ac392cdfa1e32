package p2p

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// ProtocolID is the libp2p protocol of a cotrain session. The version in it
// is the stream protocol's (frames of sync/wire over one stream per worker);
// a peer that speaks another version fails stream negotiation with an error
// naming the protocol, rather than misreading frames.
const ProtocolID protocol.ID = "/cotrain/sync/1.0.0"

// DefaultMaxFrame is the largest frame body a connection accepts when
// HostConfig.MaxFrame is 0: room for a Welcome carrying the weights and two
// Adam tensors of a model of a few million parameters.
const DefaultMaxFrame = 64 << 20

// Errors. Every error of this package is prefixed "p2p: " and wraps one of
// these or the underlying libp2p error with %w.
var (
	// ErrConfig: HostConfig holds a value NewHost cannot use.
	ErrConfig = errors.New("p2p: bad host config")
	// ErrAddr: Dial was given something other than a /p2p/ multiaddr.
	ErrAddr = errors.New("p2p: bad peer address")
	// ErrConnect: no connection could be made to the peer, or its security
	// handshake failed. Among the causes is a private-network key (PSK)
	// that differs between the two sides: the pnet layer cannot tell a
	// wrong key from a broken peer, so the message names both.
	ErrConnect = errors.New("p2p: cannot connect")
	// ErrProtocol: the peer connected but does not serve ProtocolID.
	ErrProtocol = errors.New("p2p: peer does not serve " + string(ProtocolID))
	// ErrClosed: the host or listener was closed.
	ErrClosed = errors.New("p2p: closed")
)

// HostConfig configures NewHost. The zero value is usable: a fresh
// identity, listening on every IPv4 interface over TCP and QUIC.
type HostConfig struct {
	// Listen lists the multiaddrs to listen on, for example
	// "/ip4/0.0.0.0/tcp/4001" and "/ip4/0.0.0.0/udp/4001/quic-v1". Empty
	// means DefaultListen (DefaultPrivateListen when PSK is set).
	Listen []string
	// Identity is the host's key, which fixes its peer ID. Nil means a new
	// Ed25519 key (use LoadOrCreateIdentity to keep one across restarts).
	Identity crypto.PrivKey
	// PSK, when not nil, makes the host join a private network: it then
	// connects only to peers holding the same 32-byte key (LoadPSK reads
	// one from a swarm.key file). libp2p's QUIC transport cannot carry a
	// private network, so with a PSK the host speaks TCP only and a QUIC
	// address in Listen is a config error.
	PSK []byte
	// MaxFrame caps the body of a frame a connection accepts; 0 means
	// DefaultMaxFrame.
	MaxFrame int
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
}

// DefaultListen is the listen set of a host without a PSK.
var DefaultListen = []string{"/ip4/0.0.0.0/tcp/0", "/ip4/0.0.0.0/udp/0/quic-v1"}

// DefaultPrivateListen is the listen set of a host with a PSK (TCP only).
var DefaultPrivateListen = []string{"/ip4/0.0.0.0/tcp/0"}

// Host is a libp2p host serving or dialing cotrain sessions. It is safe for
// concurrent use. Close it when done: it owns sockets and goroutines.
type Host struct {
	h        host.Host
	maxFrame int
	private  bool
	log      *slog.Logger

	mu       sync.Mutex
	listener *listener // the current listener, nil when none
	closed   bool
}

// NewHost starts a libp2p host as cfg says. The host is encrypted (TLS 1.3
// or Noise, negotiated), multiplexes streams with yamux, and has what a
// phone on one Wi-Fi does not need switched off: relays, NAT port mapping,
// hole punching, metrics. ctx bounds nothing after NewHost returns; it is
// there for future setup work (it is checked once).
func NewHost(ctx context.Context, cfg HostConfig) (*Host, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("p2p: starting host: %w", err)
	}
	if cfg.PSK != nil && len(cfg.PSK) != PSKSize {
		return nil, fmt.Errorf("%w: the private-network key has %d bytes, want %d", ErrConfig, len(cfg.PSK), PSKSize)
	}
	if cfg.MaxFrame < 0 {
		return nil, fmt.Errorf("%w: MaxFrame is %d, want 0 (default) or more", ErrConfig, cfg.MaxFrame)
	}
	listen := cfg.Listen
	if len(listen) == 0 {
		listen = DefaultListen
		if cfg.PSK != nil {
			listen = DefaultPrivateListen
		}
	}
	addrs := make([]ma.Multiaddr, 0, len(listen))
	for _, s := range listen {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("%w: listen address %q: %w", ErrConfig, s, err)
		}
		if cfg.PSK != nil && isQUIC(a) {
			return nil, fmt.Errorf("%w: listen address %q is QUIC, which cannot carry a private network (PSK): listen on TCP", ErrConfig, s)
		}
		addrs = append(addrs, a)
	}
	id := cfg.Identity
	if id == nil {
		var err error
		if id, err = GenerateIdentity(rand.Reader); err != nil {
			return nil, err
		}
	}
	opts := []libp2p.Option{
		libp2p.Identity(id),
		libp2p.ListenAddrs(addrs...),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		libp2p.Ping(false),
		libp2p.UserAgent("cotrain"),
	}
	// Security and muxers stay libp2p's defaults (TLS and Noise, yamux).
	// NAT port mapping and hole punching are off unless asked for, and we
	// never ask.
	if cfg.PSK != nil {
		opts = append(opts, libp2p.PrivateNetwork(cfg.PSK))
	} else {
		opts = append(opts, libp2p.Transport(quic.NewTransport))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("p2p: starting host: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	maxFrame := cfg.MaxFrame
	if maxFrame == 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Host{h: h, maxFrame: maxFrame, private: cfg.PSK != nil, log: log.With("peer", h.ID().String())}, nil
}

// isQUIC tells whether a uses a UDP-based libp2p transport.
func isQUIC(a ma.Multiaddr) bool {
	for _, c := range a {
		switch c.Protocol().Code {
		case ma.P_QUIC, ma.P_QUIC_V1, ma.P_WEBTRANSPORT, ma.P_WEBRTC_DIRECT:
			return true
		}
	}
	return false
}

// ID returns the host's peer ID as a string ("12D3KooW…"), the value the
// other side's Conn.RemotePeer reports.
func (h *Host) ID() string { return h.h.ID().String() }

// Addrs returns the addresses others can dial, each a full multiaddr ending
// in /p2p/<peer id>, in libp2p's order. Listening on 0.0.0.0 expands to the
// addresses of the host's interfaces.
func (h *Host) Addrs() []string {
	self, err := ma.NewComponent("p2p", h.h.ID().String())
	if err != nil { // an ID we made ourselves always encodes
		panic(fmt.Sprintf("p2p: encoding own peer id: %v", err))
	}
	var out []string
	for _, a := range h.h.Addrs() {
		out = append(out, a.Encapsulate(self.Multiaddr()).String())
	}
	return out
}

// Libp2p returns the underlying libp2p host, for what this package does
// not wrap (peer store, connection events). Do not close it: close h.
func (h *Host) Libp2p() host.Host { return h.h }

// Close stops the listener, if any, and closes every connection.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	l := h.listener
	h.mu.Unlock()
	if l != nil {
		l.Close()
	}
	if err := h.h.Close(); err != nil {
		return fmt.Errorf("p2p: closing host: %w", err)
	}
	return nil
}

// parsePeerAddr parses a multiaddr ending in /p2p/<peer id>.
func parsePeerAddr(addr string) (peer.AddrInfo, error) {
	a, err := ma.NewMultiaddr(strings.TrimSpace(addr))
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("%w: %q: %w", ErrAddr, addr, err)
	}
	info, err := peer.AddrInfoFromP2pAddr(a)
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("%w: %q must end in /p2p/<peer id>: %w", ErrAddr, addr, err)
	}
	if len(info.Addrs) == 0 {
		return peer.AddrInfo{}, fmt.Errorf("%w: %q has a peer id but no transport address", ErrAddr, addr)
	}
	return *info, nil
}
