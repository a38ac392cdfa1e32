package gpu

import "testing"

// Philox4x32-10 against the known-answer vectors of Random123
// (kat_vectors: counter, key, output), so the generator is the published
// one and not a look-alike with weaker mixing.
func TestPhiloxKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		c      [4]uint32
		k0, k1 uint32
		want   [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, 0, 0, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff,
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0,
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		if got := philox4x32(tc.c, new(philoxKeys(tc.k0, tc.k1))); got != tc.want {
			t.Errorf("philox4x32(%08x, %08x %08x) = %08x, want %08x", tc.c, tc.k0, tc.k1, got, tc.want)
		}
	}
}
