package discovery

import (
	"slices"
	"testing"
)

func TestReachable(t *testing.T) {
	const id = "/p2p/" + testPeer
	lo4 := "/ip4/127.0.0.1/tcp/4001" + id
	lo6 := "/ip6/::1/tcp/4001" + id
	loQUIC := "/ip4/127.0.0.1/udp/4001/quic-v1" + id
	lan := "/ip4/192.168.1.20/tcp/4001" + id
	lanQUIC := "/ip4/192.168.1.20/udp/4001/quic-v1" + id
	lan6 := "/ip6/fd00::20/tcp/4001" + id
	ll4 := "/ip4/169.254.7.1/tcp/4001" + id
	ll6 := "/ip6zone/wlan0/ip6/fe80::1/tcp/4001" + id
	any4 := "/ip4/0.0.0.0/tcp/4001" + id
	name := "/dns4/hub.example/tcp/4001" + id
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"loopback first, as libp2p lists them", []string{lo4, loQUIC, lan, lo6, lanQUIC}, []string{lan, lanQUIC}},
		{"link-local dropped beside a routable one", []string{lo4, ll4, ll6, lan6}, []string{lan6}},
		{"link-local when that is all", []string{lo4, ll6, ll4, lo6}, []string{ll6, ll4}},
		{"loopback when that is all", []string{lo4, loQUIC, lo6}, []string{lo4, loQUIC, lo6}},
		{"unspecified never", []string{any4, lo4}, []string{lo4}},
		{"only unspecified", []string{any4}, nil},
		{"names kept, deciding nothing", []string{name, lo4}, []string{name, lo4}},
		{"names kept beside a routable one", []string{lo4, name, lan}, []string{name, lan}},
		{"none", nil, nil},
	} {
		if got := Reachable(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Reachable(%q)\n = %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
	}
}
