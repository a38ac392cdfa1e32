// Package discovery lets workers find a hub on the local network by mDNS
// (DNS-SD over multicast, github.com/grandcat/zeroconf): the hub advertises
// a service of type ServiceType in Domain whose TXT record carries its
// session name, model, libp2p peer id, multiaddrs and protocol versions
// (layout in txt.go); a worker browses for it and dials one of the
// addresses with sync/p2p. A hub's address can also be given by hand, and
// then no mDNS is needed.
//
// # The caller's duties
//
//  1. Hub: after the p2p host listens, call Advertise with its Session,
//     Model, PeerID and Addrs (p2p.Host.Addrs); keep the returned stop and
//     call it (or cancel ctx) when the session ends, so that goodbye
//     packets tell browsers it is gone.
//  2. Worker: call Find with the session name the user gave (or "" to
//     take the only hub on the network) and dial all of Info.Addrs at once
//     (p2p.Host.DialAny): which of them this device can reach depends on
//     the networks it shares with the hub. Find waits the whole window (DefaultWindow or WithWindow)
//     so that it can notice a second hub of the same name; ErrNotFound,
//     ErrAmbiguous and ErrVersion carry messages meant for the user.
//  3. On a device with several networks, pass WithInterfaces with the one
//     the session runs on (the Wi-Fi); otherwise every interface that is
//     up and multicast-capable is used.
//  4. Trust nothing in an answer: anyone on the network can advertise. The
//     peer id is checked by the p2p handshake when dialing, and a private
//     network key (p2p.HostConfig.PSK) decides who may join.
//
// # How the test runs real mDNS
//
// TestMDNS (mdns_linux_test.go) does not mock anything: real zeroconf
// servers and resolvers exchange real multicast packets. To keep those
// packets off every real network, and away from any mDNS responder of the
// machine (avahi, systemd-resolved), the test re-executes its own binary
// with clone flag CLONE_NEWNET, that is, in a fresh network namespace
// whose only interface is a loopback. The child (TestMDNSInNamespace)
// refuses to run if it sees any interface but lo, then sets lo UP and
// MULTICAST with an ioctl (Linux's lo has no MULTICAST flag by default, and
// a new namespace's lo is down), so no `ip` binary is needed. The host's
// own lo is never changed, and the namespace disappears with the child.
//
// Creating the namespace needs CAP_SYS_ADMIN (root, as in CI). Without
// root the test asks for a user namespace as well, which works where the
// kernel allows unprivileged user namespaces; when neither is possible it
// skips with the reason. Each Find listens 400 ms there; the whole test
// takes about 5 seconds.
//
// Two quirks of zeroconf v1.0.0 shape the code: it leaves out loopback IPs
// from the A records it derives from interfaces, and its resolver ignores
// answers without an address record, so Advertise always gives the IPs of
// the advertised multiaddrs explicitly (RegisterProxy); and its resolver
// blocks on an unread results channel, so Browse always drains it to the
// end of the window.
package discovery
