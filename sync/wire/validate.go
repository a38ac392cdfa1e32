package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxDepth bounds the nesting of msgpack containers in a frame body. Our
// deepest message (Welcome: header array, payload, state, optimizer,
// tensors, one tensor) nests 6 deep; the bound leaves room for growth and
// keeps a hostile body of a million nested arrays from exhausting the stack
// of a recursive decoder.
const maxDepth = 32

// errShort is what validate reports when a value runs past the body's end.
var errShort = errors.New("value runs past the end of the frame")

// validate walks body, which must be exactly one msgpack value, without
// decoding it, and checks that every length it declares fits in the bytes
// that follow and that containers nest at most maxDepth deep.
//
// It runs before the msgpack decoder sees the body. The decoder trusts
// declared lengths when it allocates (a 5-byte bin header may claim 4 GiB),
// so after validate every allocation the decoder makes is bounded by the
// size of the body, which ReadFrame has bounded by its cap.
func validate(body []byte) error {
	rest, err := skipValue(body, 0)
	if err != nil {
		return fmt.Errorf("at byte %d: %w", len(body)-len(rest), err)
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d bytes of trailing garbage after the message", len(rest))
	}
	return nil
}

// skipValue skips the msgpack value at the start of b and returns the rest.
// On error, the rest returned is where the bad value starts.
func skipValue(b []byte, depth int) ([]byte, error) {
	if len(b) == 0 {
		return b, errShort
	}
	start := b
	c := b[0]
	b = b[1:]
	var (
		size    uint64 // bytes of data that follow the head
		items   uint64 // values that follow (for containers)
		headLen int    // bytes of length field after the code
	)
	switch {
	case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		return b, nil
	case c <= 0x8f: // fixmap
		items = 2 * uint64(c&0x0f)
	case c <= 0x9f: // fixarray
		items = uint64(c & 0x0f)
	case c <= 0xbf: // fixstr
		size = uint64(c & 0x1f)
	default:
		switch c {
		case 0xc0, 0xc2, 0xc3: // nil, false, true
			return b, nil
		case 0xc4, 0xd9: // bin8, str8
			headLen = 1
		case 0xc5, 0xda: // bin16, str16
			headLen = 2
		case 0xc6, 0xdb: // bin32, str32
			headLen = 4
		case 0xc7: // ext8: length, type
			headLen = 1
			size = 1
		case 0xc8: // ext16
			headLen = 2
			size = 1
		case 0xc9: // ext32
			headLen = 4
			size = 1
		case 0xca, 0xce, 0xd2: // float32, uint32, int32
			size = 4
		case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
			size = 8
		case 0xcc, 0xd0: // uint8, int8
			size = 1
		case 0xcd, 0xd1: // uint16, int16
			size = 2
		case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 plus type
			size = 1 + 1<<(c-0xd4)
		case 0xdc, 0xde: // array16, map16
			headLen = 2
		case 0xdd, 0xdf: // array32, map32
			headLen = 4
		default: // 0xc1 is never used
			return start, fmt.Errorf("invalid msgpack code 0x%02x", c)
		}
	}
	if headLen > 0 {
		if len(b) < headLen {
			return start, errShort
		}
		var n uint64
		switch headLen {
		case 1:
			n = uint64(b[0])
		case 2:
			n = uint64(binary.BigEndian.Uint16(b))
		case 4:
			n = uint64(binary.BigEndian.Uint32(b))
		}
		b = b[headLen:]
		switch c {
		case 0xdc, 0xdd: // arrays
			items = n
		case 0xde, 0xdf: // maps: a key and a value per entry
			items = 2 * n
		default: // str, bin, ext
			size += n
		}
	}
	if size > uint64(len(b)) {
		return start, fmt.Errorf("%w: declares %d bytes, %d remain", errShort, size, len(b))
	}
	b = b[size:]
	if items == 0 {
		return b, nil
	}
	// Every value takes at least one byte: refuse counts that cannot fit
	// before walking them.
	if items > uint64(len(b)) {
		return start, fmt.Errorf("%w: declares %d values, %d bytes remain", errShort, items, len(b))
	}
	if depth+1 > maxDepth {
		return start, fmt.Errorf("containers nest deeper than %d", maxDepth)
	}
	for range items {
		var err error
		if b, err = skipValue(b, depth+1); err != nil {
			return b, err
		}
	}
	return b, nil
}
