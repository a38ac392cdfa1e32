package discovery

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/sync/wire"
)

const testPeer = "12D3KooWEsMqH5gn49BakbQvMXXjhetLnqXAAdvCiV3TJZDMvEdb"

func TestTXTRoundTrip(t *testing.T) {
	long := "/dns4/" + strings.Repeat("very-long-host-name.", 12) + "example/tcp/4001/p2p/" + testPeer
	for _, tc := range []struct {
		name    string
		info    Info
		strings int // how many TXT strings, 0 to skip the check
	}{
		{"one address", Info{Session: "mnist", Model: "lenet5", PeerID: testPeer, Addrs: []string{"/ip4/192.168.1.7/tcp/4001/p2p/" + testPeer}}, 6},
		{"tcp and quic", Info{Session: "s", Model: "lenet-caffe", PeerID: testPeer, Addrs: []string{
			"/ip4/192.168.1.7/tcp/4001/p2p/" + testPeer, "/ip4/192.168.1.7/udp/4001/quic-v1/p2p/" + testPeer}}, 7},
		{"empty session and model", Info{PeerID: testPeer, Addrs: []string{"/ip4/10.0.0.1/tcp/1/p2p/" + testPeer}}, 6},
		{"address longer than a TXT string", Info{Session: "s", Model: "m", PeerID: testPeer, Addrs: []string{long, "/ip4/10.0.0.1/tcp/1/p2p/" + testPeer}}, 8},
		{"UTF-8 session longer than a TXT string", Info{Session: strings.Repeat("é", 200), Model: "m", PeerID: testPeer, Addrs: []string{"/ip4/10.0.0.1/tcp/1/p2p/" + testPeer}}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			txt, err := encodeTXT(tc.info)
			if err != nil {
				t.Fatalf("encodeTXT: %v", err)
			}
			for _, s := range txt {
				if len(s) > MaxTXTString {
					t.Errorf("TXT string of %d bytes: %q", len(s), s)
				}
				if strings.Contains(s, "/p2p/") {
					t.Errorf("TXT string %q repeats the peer id", s)
				}
			}
			if tc.strings != 0 && len(txt) != tc.strings {
				t.Errorf("%d TXT strings, want %d: %q", len(txt), tc.strings, txt)
			}
			got, err := decodeTXT(txt)
			if err != nil {
				t.Fatalf("decodeTXT(%q): %v", txt, err)
			}
			want := tc.info
			want.Protocol = wire.ProtocolVersion
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded %+v\nwant    %+v", got, want)
			}
		})
	}
}

func TestTXTEncodeRefuses(t *testing.T) {
	addr := "/ip4/10.0.0.1/tcp/1/p2p/" + testPeer
	many := make([]string, 300)
	for i := range many {
		many[i] = addr
	}
	for _, tc := range []struct {
		name string
		info Info
		want error
	}{
		{"no peer id", Info{Addrs: []string{addr}}, ErrRecord},
		{"no address", Info{PeerID: testPeer}, ErrRecord},
		{"empty address", Info{PeerID: testPeer, Addrs: []string{""}}, ErrRecord},
		{"another peer's address", Info{PeerID: testPeer, Addrs: []string{"/ip4/10.0.0.1/tcp/1/p2p/12D3KooWOther"}}, ErrRecord},
		{"too many addresses", Info{PeerID: testPeer, Addrs: many}, ErrTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			txt, err := encodeTXT(tc.info)
			if !errors.Is(err, tc.want) {
				t.Fatalf("encodeTXT = %d strings, %v; want %v", len(txt), err, tc.want)
			}
		})
	}
}

func TestTXTDecode(t *testing.T) {
	base := []string{"txtvers=1", "proto=1", "session=s", "model=m", "peer=P", "addr=/ip4/10.0.0.1/tcp/1"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	for _, tc := range []struct {
		name string
		txt  []string
		ok   bool
		want Info
	}{
		{"minimal", base, true, Info{Session: "s", Model: "m", PeerID: "P", Addrs: []string{"/ip4/10.0.0.1/tcp/1/p2p/P"}, Protocol: 1}},
		{"unknown keys and flags ignored", with("future=yes", "flag"), true, Info{Session: "s", Model: "m", PeerID: "P", Addrs: []string{"/ip4/10.0.0.1/tcp/1/p2p/P"}, Protocol: 1}},
		{"another wire version is reported", []string{"txtvers=1", "proto=9", "peer=P", "addr=/a"}, true, Info{PeerID: "P", Addrs: []string{"/a/p2p/P"}, Protocol: 9}},
		{"continuation", []string{"txtvers=1", "proto=1", "peer=P", "addr=/ip4/", "addr+=10.0.0.1", "addr=/b"}, true, Info{PeerID: "P", Addrs: []string{"/ip4/10.0.0.1/p2p/P", "/b/p2p/P"}, Protocol: 1}},
		{"not ours", []string{"path=/printer"}, false, Info{}},
		{"newer layout", []string{"txtvers=2", "proto=1", "peer=P", "addr=/a"}, false, Info{}},
		{"bad proto", []string{"txtvers=1", "proto=x", "peer=P", "addr=/a"}, false, Info{}},
		{"no peer", []string{"txtvers=1", "proto=1", "addr=/a"}, false, Info{}},
		{"no address", []string{"txtvers=1", "proto=1", "peer=P"}, false, Info{}},
		{"orphan continuation", []string{"txtvers=1", "proto=1", "peer=P", "addr+=/a"}, false, Info{}},
		{"continuation of another key", with("session+=x"), false, Info{}},
		{"empty", nil, false, Info{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeTXT(tc.txt)
			if !tc.ok {
				if !errors.Is(err, ErrRecord) {
					t.Fatalf("decodeTXT = %+v, %v; want ErrRecord", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeTXT: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decoded %+v\nwant    %+v", got, tc.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ session, want string }{
		{"mnist", "cotrain-mnist-kbQvMXXjhetL"},
		{"My run #2 (test)", "cotrain-My-run-2-test-kbQvMXXjhetL"},
		{"", "cotrain-hub-kbQvMXXjhetL"},
		{"ééé", "cotrain-hub-kbQvMXXjhetL"},
		{strings.Repeat("a", 100), "cotrain-" + strings.Repeat("a", 40) + "-kbQvMXXjhetL"},
	} {
		got := instanceName(tc.session, testPeer[:len(testPeer)-20])
		if got != tc.want {
			t.Errorf("instanceName(%q) = %q, want %q", tc.session, got, tc.want)
		}
		if len(got) > 63 {
			t.Errorf("instanceName(%q) has %d bytes, a DNS label has at most 63", tc.session, len(got))
		}
	}
	addrs := []string{"/ip4/0.0.0.0/tcp/9", "/ip4/192.168.1.7/udp/4002/quic-v1", "/ip6/::1/tcp/4001", "/ip4/192.168.1.7/tcp/4001", "/dns4/x/tcp/5"}
	if got, want := addrIPs(addrs), []string{"192.168.1.7", "::1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("addrIPs = %v, want %v", got, want)
	}
	if got := firstPort(addrs[1:2]); got != 4002 {
		t.Errorf("firstPort of a QUIC address = %d, want 4002", got)
	}
	if got := firstPort(addrs); got != 9 {
		t.Errorf("firstPort = %d, want 9 (the first TCP port)", got)
	}
}
