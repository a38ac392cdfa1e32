package discovery

import "net"

// reach ranks an address by who can reach it: everyone on the network
// (routable), a peer on the same link only (link-local: 169.254/16, fe80::/10,
// dialable only with the right zone), or this host only (loopback).
type reach int

const (
	reachUnspecified reach = iota // 0.0.0.0, ::  (never dialable)
	reachLoopback
	reachLinkLocal
	reachRoutable
)

// reachOf ranks the multiaddr a by its /ip4/ or /ip6/ component. An
// address without one (/dns4/…) has no rank (ok false): only its name's
// resolver knows where it leads.
func reachOf(a string) (r reach, ok bool) {
	v := component(a, "ip4")
	if v == "" {
		v = component(a, "ip6")
	}
	if v == "" {
		return reachRoutable, false
	}
	ip := net.ParseIP(v)
	switch {
	case ip == nil, ip.IsUnspecified():
		return reachUnspecified, true
	case ip.IsLoopback():
		return reachLoopback, true
	case ip.IsLinkLocalUnicast():
		return reachLinkLocal, true
	}
	return reachRoutable, true
}

// Reachable returns the addresses of addrs that a peer on another device
// can dial, in their order: no loopback address and no unspecified one,
// and link-local ones only when there is no routable address. Addresses by
// name (/dns4/…) are kept as they are and decide nothing. What a hub
// advertises is what a worker on another phone receives, and a loopback
// address there is that phone itself: before this filter the hub's
// 127.0.0.1 came first and a worker that dialled it never found the hub.
//
// A hub that listens on loopback alone (tests, a hub and workers on one
// machine) can be reached from its own host only; Reachable then returns
// those loopback addresses rather than nothing, since mDNS on that host
// still reaches the workers that can use them.
func Reachable(addrs []string) []string {
	best := reachUnspecified
	for _, a := range addrs {
		if r, ok := reachOf(a); ok {
			best = max(best, r)
		}
	}
	var out []string
	for _, a := range addrs {
		r, ok := reachOf(a)
		if !ok || (r != reachUnspecified && (r == reachRoutable || r == best)) {
			out = append(out, a)
		}
	}
	return out
}
