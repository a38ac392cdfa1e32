package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// fuzzMax is the frame cap of the fuzz target: small, so that the fuzzer
// also meets ErrTooLarge.
const fuzzMax = 1 << 16

// FuzzReadFrame feeds arbitrary bytes to the reader. It checks that the
// decoder never panics, that every error is one of the package's (or io.EOF
// at a clean end), and that a frame it accepts re-encodes to a frame that
// decodes to the very same bytes again.
//
//	go test ./sync/wire -run '^$' -fuzz FuzzReadFrame -fuzztime 30s
func FuzzReadFrame(f *testing.F) {
	// Small vectors: the fuzzer minimises every new interesting input, and
	// minimising a frame of a thousand floats byte by byte takes minutes.
	for _, m := range samplesOf(3) {
		f.Add(frameBytes(f, m))
	}
	small := frameBytes(f, &Push{Samples: 1, Gradient: Floats{1, 2, 3}})
	f.Add(small[:len(small)-1])                                              // truncated
	f.Add(append(bytes.Clone(small), 0, 0, 0, 0))                            // a second, empty frame
	f.Add([]byte{0, 0, 0, 1, 0xc1})                                          // reserved code
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})                                    // over the cap
	f.Add([]byte{0, 0, 0, 6, 0x95, 9, 3, 0, 0xa0, 0x80})                     // newer version
	f.Add([]byte{0, 0, 0, 6, 0x95, byte(ProtocolVersion), 9, 0, 0xa0, 0x80}) // unknown kind
	f.Add([]byte("not a frame at all"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), fuzzMax)
		var reuse Message
		for range 4 { // a few frames from the same stream, reusing
			m, err := r.ReadMessage(reuse)
			if err != nil {
				if m != nil {
					t.Fatalf("a message came with error %v", err)
				}
				if !isOurs(err) {
					t.Fatalf("error %v wraps none of the package's sentinels", err)
				}
				return
			}
			again := frameBytes(t, m)
			m2, err := ReadFrame(bytes.NewReader(again), len(again))
			if err != nil {
				t.Fatalf("a re-encoded %s does not decode: %v", m.Kind(), err)
			}
			if third := frameBytes(t, m2); !bytes.Equal(third, again) {
				t.Fatalf("a %s changes when encoded and decoded again", m.Kind())
			}
			reuse = m
		}
	})
}

// isOurs reports whether err is io.EOF or wraps one of the sentinels.
func isOurs(err error) bool {
	if err == io.EOF {
		return true
	}
	for _, s := range []error{ErrTooLarge, ErrTruncated, ErrVersion, ErrUnknownKind, ErrMalformed} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
