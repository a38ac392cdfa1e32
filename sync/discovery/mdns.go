package discovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cotrain/cotrain/sync/wire"
	"github.com/grandcat/zeroconf"
)

// ServiceType is the DNS-SD service type of a cotrain hub. It says _tcp
// because the SRV record's port is the hub's TCP port (DNS-SD uses _udp
// only for services that run over UDP alone); the TXT record lists every
// address, QUIC ones included.
const ServiceType = "_cotrain._tcp"

// Domain is the mDNS domain.
const Domain = "local."

// DefaultWindow is how long Browse and Find listen for answers when no
// WithWindow option is given. Hubs answer a query at once; the window
// covers a phone's Wi-Fi power saving, which can hold packets for a few
// hundred milliseconds.
const DefaultWindow = time.Second

// Errors of Advertise, Browse and Find, wrapped with %w.
var (
	// ErrMDNS: the mDNS sockets could not be opened (no multicast-capable
	// interface up, or the chosen interfaces cannot join the group).
	ErrMDNS = errors.New("discovery: mDNS unavailable")
	// ErrNotFound: no hub of the session answered within the window.
	ErrNotFound = errors.New("discovery: no hub found")
	// ErrAmbiguous: several hubs match and the caller must choose.
	ErrAmbiguous = errors.New("discovery: several hubs found")
	// ErrVersion: the hub found speaks another wire protocol version.
	ErrVersion = errors.New("discovery: hub speaks another protocol version")
)

// Info describes a hub: what Advertise announces and Browse returns.
type Info struct {
	// Session names the training run; workers look for it by name.
	Session string
	// Model names the model trained ("lenet5").
	Model string
	// PeerID is the hub's libp2p peer id.
	PeerID string
	// Addrs are the hub's full multiaddrs, each ending in /p2p/PeerID
	// (p2p.Host.Addrs). Advertise announces those a peer can reach
	// (Reachable); Browse returns them in the advertised order, and a
	// worker dials them all at once (p2p.Host.DialAny).
	Addrs []string
	// Port is the SRV record's port. Advertise takes the first TCP port of
	// Addrs (else the first UDP one) when it is 0.
	Port int
	// Protocol is the hub's wire.ProtocolVersion. Advertise ignores it and
	// always announces this build's; Browse reports what the hub announced.
	Protocol uint16
	// Instance is the mDNS service instance name; Advertise derives it from
	// Session and PeerID, Browse reports it.
	Instance string
}

// Option adjusts Advertise, Browse and Find.
type Option func(*options)

type options struct {
	ifaces []net.Interface
	window time.Duration
}

// WithInterfaces limits mDNS to the given interfaces (the Wi-Fi one on a
// phone; lo in tests). Without it, every interface that is up and
// multicast-capable is used.
func WithInterfaces(ifaces ...net.Interface) Option {
	return func(o *options) { o.ifaces = ifaces }
}

// WithWindow sets how long Browse and Find listen for answers.
func WithWindow(d time.Duration) Option {
	return func(o *options) { o.window = d }
}

func collect(opts []Option) options {
	o := options{window: DefaultWindow}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Advertise announces info on mDNS until stop is called or ctx is done,
// answering the queries of Browse and Find. stop sends mDNS goodbye
// packets, closes the sockets and waits for the answering goroutines to
// end; it may be called more than once.
//
// It announces only the addresses of info.Addrs that a peer on another
// device can dial (Reachable: no loopback, link-local only when there is
// nothing else), in the TXT record and in the A/AAAA records alike.
func Advertise(ctx context.Context, info Info, opts ...Option) (stop func(), err error) {
	o := collect(opts)
	if len(info.Addrs) > 0 {
		info.Addrs = Reachable(info.Addrs)
		if len(info.Addrs) == 0 {
			return nil, fmt.Errorf("%w: no address a peer can dial among the hub's (all unspecified)", ErrRecord)
		}
	}
	txt, err := encodeTXT(info)
	if err != nil {
		return nil, err
	}
	port := info.Port
	if port == 0 {
		port = firstPort(info.Addrs)
	}
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("%w: no port: Info.Port is %d and no address has a TCP or UDP port", ErrRecord, info.Port)
	}
	instance := instanceName(info.Session, info.PeerID)
	host := "cotrain-" + tail(sanitize(info.PeerID), 12)
	srv, err := zeroconf.RegisterProxy(instance, ServiceType, Domain, port, host, addrIPs(info.Addrs), txt, o.ifaces)
	if err != nil {
		return nil, fmt.Errorf("%w: advertising %q: %w", ErrMDNS, instance, err)
	}
	done := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			srv.Shutdown()
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-done:
		}
	}()
	return stop, nil
}

// Browse listens for hubs for the window (WithWindow, DefaultWindow) or
// until ctx is done, whichever comes first, and returns those of the given
// session, or every hub heard when session is "", sorted by session and
// peer id. Answers that are not well-formed cotrain records are skipped.
// It fails when mDNS cannot start, or when ctx ends before the window with
// nothing heard.
func Browse(ctx context.Context, session string, opts ...Option) ([]Info, error) {
	all, err := browse(ctx, collect(opts))
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, info := range all {
		if session == "" || info.Session == session {
			out = append(out, info)
		}
	}
	return out, nil
}

// Find returns the hub of the given session, or, when session is "", the
// only hub heard. It listens for the whole window (so that a second hub of
// the same name is noticed) and fails with ErrNotFound when none matches
// (naming the sessions it did hear), ErrAmbiguous when several do, and
// ErrVersion when the match speaks another wire protocol version.
func Find(ctx context.Context, session string, opts ...Option) (Info, error) {
	o := collect(opts)
	all, err := browse(ctx, o)
	if err != nil {
		return Info{}, err
	}
	var match []Info
	var heard []string
	for _, info := range all {
		heard = append(heard, strconv.Quote(info.Session))
		if session == "" || info.Session == session {
			match = append(match, info)
		}
	}
	switch {
	case len(match) == 0 && session == "":
		return Info{}, fmt.Errorf("%w: no cotrain hub answered within %v", ErrNotFound, o.window)
	case len(match) == 0:
		others := "no other session either"
		if len(heard) > 0 {
			others = "heard sessions " + strings.Join(heard, ", ")
		}
		return Info{}, fmt.Errorf("%w: no hub of session %q answered within %v (%s)", ErrNotFound, session, o.window, others)
	case len(match) > 1:
		var names []string
		for _, m := range match {
			names = append(names, fmt.Sprintf("%q at %s", m.Session, m.PeerID))
		}
		what := "hubs"
		if session != "" {
			what = fmt.Sprintf("hubs of session %q", session)
		}
		return Info{}, fmt.Errorf("%w: %d %s answered (%s): name the session, or stop the extra hub", ErrAmbiguous, len(match), what, strings.Join(names, "; "))
	}
	if p := match[0].Protocol; p != wire.ProtocolVersion {
		return Info{}, fmt.Errorf("%w: the hub of session %q speaks version %d, this build %d", ErrVersion, match[0].Session, p, wire.ProtocolVersion)
	}
	return match[0], nil
}

// browse collects every well-formed cotrain record heard within the window.
func browse(ctx context.Context, o options) ([]Info, error) {
	r, err := newResolver(o.ifaces)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, o.window)
	defer cancel()
	// zeroconf sends on entries without watching ctx, and closes it once
	// ctx is done: read it to the end, or its goroutine blocks forever.
	entries := make(chan *zeroconf.ServiceEntry)
	if err := r.Browse(wctx, ServiceType, Domain, entries); err != nil {
		return nil, fmt.Errorf("%w: browsing: %w", ErrMDNS, err)
	}
	found := map[string]Info{}
	for e := range entries {
		info, err := decodeTXT(e.Text)
		if err != nil {
			continue // another program's service of our type, or a broken hub
		}
		info.Port = e.Port
		info.Instance = e.Instance
		found[e.Instance] = info
	}
	if len(found) == 0 && ctx.Err() != nil {
		return nil, fmt.Errorf("discovery: browsing: %w", ctx.Err())
	}
	out := make([]Info, 0, len(found))
	for _, info := range found {
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.PeerID, b.PeerID))
	})
	return out, nil
}

// newResolver joins the mDNS group over IPv4 and IPv6, or over whichever of
// the two the interfaces support.
func newResolver(ifaces []net.Interface) (*zeroconf.Resolver, error) {
	var errs []error
	for _, ip := range []zeroconf.IPType{zeroconf.IPv4AndIPv6, zeroconf.IPv4, zeroconf.IPv6} {
		r, err := zeroconf.NewResolver(zeroconf.SelectIfaces(ifaces), zeroconf.SelectIPTraffic(ip))
		if err == nil {
			return r, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w: %w", ErrMDNS, errors.Join(errs...))
}

// firstPort returns the port of the first /tcp/ address, else of the first
// /udp/ one, else 0.
func firstPort(addrs []string) int {
	for _, proto := range []string{"tcp", "udp"} {
		for _, a := range addrs {
			if v := component(a, proto); v != "" {
				if p, err := strconv.Atoi(v); err == nil {
					return p
				}
			}
		}
	}
	return 0
}

// addrIPs returns the distinct specified IP addresses of /ip4/ and /ip6/
// components of addrs.
func addrIPs(addrs []string) []string {
	var ips []string
	for _, a := range addrs {
		for _, proto := range []string{"ip4", "ip6"} {
			ip := net.ParseIP(component(a, proto))
			if ip == nil || ip.IsUnspecified() || slices.Contains(ips, ip.String()) {
				continue
			}
			ips = append(ips, ip.String())
		}
	}
	return ips
}

// component returns the value following /proto/ in the multiaddr a, or "".
func component(a, proto string) string {
	parts := strings.Split(a, "/")
	for i := 1; i+1 < len(parts); i++ {
		if parts[i] == proto {
			return parts[i+1]
		}
	}
	return ""
}

// instanceName returns the service instance name: unique per hub (it ends
// in the peer id's tail), readable, and a valid DNS label (at most 63
// bytes of letters, digits and hyphens, so that no resolver mangles it).
func instanceName(session, peerID string) string {
	s := sanitize(session)
	if len(s) > 40 {
		s = s[:40]
	}
	if s == "" {
		s = "hub"
	}
	return "cotrain-" + s + "-" + tail(sanitize(peerID), 12)
}

// sanitize keeps ASCII letters and digits and turns runs of anything else
// into one hyphen.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		ok := r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		switch {
		case ok:
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
