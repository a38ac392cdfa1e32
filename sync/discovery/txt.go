package discovery

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/sync/wire"
)

// The TXT record of a hub's service instance is a list of key=value strings
// (RFC 6763 §6). Each string is at most MaxTXTString bytes, a DNS limit:
// a longer value is cut into pieces, the first written "key=piece" and each
// following one "key+=piece", which the reader appends to the value before
// it. Keys that may repeat (addr) start a new value at each "key=".
//
//	txtvers=1                      layout of this record (TXTVersion)
//	proto=1                        wire.ProtocolVersion of the hub
//	session=<name>                 the training session
//	model=<name>                   the model trained ("lenet5")
//	peer=<libp2p peer id>
//	addr=<multiaddr>               once per address, without /p2p/<peer>
//
// Readers ignore keys they do not know, so fields can be added without a
// new TXTVersion.

// TXTVersion is the layout version of the TXT record, its "txtvers" key.
const TXTVersion = 1

// MaxTXTString is the most bytes one TXT string can hold.
const MaxTXTString = 255

// MaxTXT caps the whole TXT record. mDNS allows packets of 9000 bytes; we
// keep the record well under that so that the SRV, A and AAAA records fit
// in the same answer.
const MaxTXT = 6000

// Errors of the TXT codec, wrapped with %w.
var (
	// ErrRecord: a TXT record that is not a cotrain hub's, or a broken one.
	ErrRecord = errors.New("discovery: bad TXT record")
	// ErrTooLong: an Info whose TXT record would exceed MaxTXT.
	ErrTooLong = errors.New("discovery: advertisement too long")
)

// encodeTXT returns info's TXT strings, each at most MaxTXTString bytes.
func encodeTXT(info Info) ([]string, error) {
	if info.PeerID == "" {
		return nil, fmt.Errorf("%w: Info.PeerID is empty", ErrRecord)
	}
	if len(info.Addrs) == 0 {
		return nil, fmt.Errorf("%w: Info.Addrs is empty: a worker would have nothing to dial", ErrRecord)
	}
	var txt []string
	txt = appendField(txt, "txtvers", strconv.Itoa(TXTVersion))
	txt = appendField(txt, "proto", strconv.Itoa(int(wire.ProtocolVersion)))
	txt = appendField(txt, "session", info.Session)
	txt = appendField(txt, "model", info.Model)
	txt = appendField(txt, "peer", info.PeerID)
	suffix := "/p2p/" + info.PeerID
	for _, a := range info.Addrs {
		if a == "" {
			return nil, fmt.Errorf("%w: an empty address in Info.Addrs", ErrRecord)
		}
		// The peer id is in its own field: repeating it in every address
		// would cost 58 bytes each.
		bare := strings.TrimSuffix(a, suffix)
		if strings.Contains(bare, "/p2p/") {
			return nil, fmt.Errorf("%w: address %q names a peer other than %s (relayed addresses are not advertised)", ErrRecord, a, info.PeerID)
		}
		txt = appendField(txt, "addr", bare)
	}
	total := 0
	for _, s := range txt {
		total += 1 + len(s) // each string has a length byte
	}
	if total > MaxTXT {
		return nil, fmt.Errorf("%w: the TXT record would take %d bytes, the limit is %d (fewer addresses?)", ErrTooLong, total, MaxTXT)
	}
	return txt, nil
}

// appendField appends key=value to txt, cut into strings of at most
// MaxTXTString bytes. It never splits inside a UTF-8 sequence, so that each
// string stays valid text for tools that show them.
func appendField(txt []string, key, value string) []string {
	head := key + "="
	for {
		room := MaxTXTString - len(head)
		if len(value) <= room {
			return append(txt, head+value)
		}
		cut := room
		for cut > 0 && !isRuneStart(value[cut]) {
			cut--
		}
		txt = append(txt, head+value[:cut])
		value = value[cut:]
		head = key + "+="
	}
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// decodeTXT parses a TXT record written by encodeTXT. The addresses it
// returns are full multiaddrs again, ending in /p2p/<peer id>.
func decodeTXT(txt []string) (Info, error) {
	var info Info
	fields := map[string]*string{"session": &info.Session, "model": &info.Model, "peer": &info.PeerID}
	var txtvers, proto string
	fields["txtvers"] = &txtvers
	fields["proto"] = &proto
	var last string // the key of the previous string, for "key+="
	for _, s := range txt {
		key, value, ok := strings.Cut(s, "=")
		if !ok {
			continue // a boolean attribute (RFC 6763 §6.4) we do not use
		}
		if cont, isCont := strings.CutSuffix(key, "+"); isCont {
			if cont != last {
				return Info{}, fmt.Errorf("%w: %q continues %q, but the string before is %q", ErrRecord, s, cont, last)
			}
			if cont == "addr" {
				info.Addrs[len(info.Addrs)-1] += value
			} else if p := fields[cont]; p != nil {
				*p += value
			}
			continue
		}
		last = key
		if key == "addr" {
			info.Addrs = append(info.Addrs, value)
		} else if p := fields[key]; p != nil {
			*p = value
		}
	}
	if txtvers == "" {
		return Info{}, fmt.Errorf("%w: no txtvers key: not a cotrain hub", ErrRecord)
	}
	v, err := strconv.Atoi(txtvers)
	if err != nil || v != TXTVersion {
		return Info{}, fmt.Errorf("%w: txtvers is %q, this build reads %d", ErrRecord, txtvers, TXTVersion)
	}
	p, err := strconv.ParseUint(proto, 10, 16)
	if err != nil {
		return Info{}, fmt.Errorf("%w: proto is %q, want a number", ErrRecord, proto)
	}
	info.Protocol = uint16(p)
	if info.PeerID == "" || len(info.Addrs) == 0 {
		return Info{}, fmt.Errorf("%w: peer id %q and %d addresses, want both", ErrRecord, info.PeerID, len(info.Addrs))
	}
	for i, a := range info.Addrs {
		info.Addrs[i] = a + "/p2p/" + info.PeerID
	}
	return info, nil
}
