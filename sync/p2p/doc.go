// Package p2p is cotrain's real transport: a go-libp2p host whose streams
// carry sync/wire frames, one stream per worker, on the versioned protocol
// ProtocolID. It is a thin adapter: transport.NewStreamConn does the
// framing, this package adds libp2p's identity, encryption and addressing.
//
// What the host is: TCP and QUIC (TCP only in a private network), TLS 1.3 or
// Noise negotiated by libp2p, yamux streams over TCP. What it is not: no
// relays, no NAT port mapping, no hole punching, no metrics, no ping
// service. A session runs on one Wi-Fi (or loopback), where peers dial each
// other directly; anything more would only open doors.
//
// Who a peer is: its libp2p peer id, proven by the security handshake.
// Conn.RemotePeer returns it; the hub should key workers by it and compare
// wire headers' Sender against it. A worker that keeps its key file
// (LoadOrCreateIdentity) keeps its peer id across restarts.
//
// Who may connect: anyone who can reach the port, unless HostConfig.PSK
// puts the host in a libp2p private network, where a connection needs the
// same 32-byte key on both sides (a swarm.key file, LoadPSK). A key
// mismatch fails in the handshake, so Dial reports it as ErrConnect with a
// hint; the pnet layer cannot tell a wrong key from a broken peer.
//
// # The caller's duties
//
//  1. Create one Host per process (NewHost) and Close it at the end; it
//     owns sockets and goroutines.
//  2. Hub: call Listen once, then Accept in a loop, handing each Conn to
//     its own reader goroutine. A stream is wrapped into a Conn (and starts
//     reading ahead) as soon as it arrives, so a worker's first message
//     does not wait for Accept; streams beyond AcceptBacklog are reset.
//  3. Worker: Dial one of the hub's Addrs (or those sync/discovery found).
//     Dial negotiates ProtocolID before returning, so a peer that is not a
//     listening hub fails there (ErrProtocol), not at the first Send.
//  4. Follow sync/transport's duties for each Conn: one reader, any
//     number of senders, Close when done. A failed Send resets the stream
//     (the peer sees an error, not a clean end after half a frame), and so
//     does a bad frame from the peer.
//  5. Test errors with errors.Is: ErrAddr, ErrConnect, ErrProtocol,
//     ErrConfig, and the seam's transport.ErrRefused and
//     transport.ErrClosed; io.EOF comes bare from Recv after the peer
//     closed.
package p2p
