package wire

import (
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Sizer measures frames without building them: Size(m) is the length of
// the frame WriteMessage would write for m, length prefix included, found
// by running the same encoder into a counter. A Floats vector counts its
// 4·n bytes without converting them, so measuring a gradient costs next to
// nothing: the simulator, which hands messages over in memory, uses it to
// charge each one its exact airtime. It is not safe for concurrent use.
type Sizer struct {
	n   sizeCount
	enc *msgpack.Encoder
}

// NewSizer returns a Sizer.
func NewSizer() *Sizer {
	s := &Sizer{}
	s.enc = msgpack.NewEncoder(&s.n)
	// As NewWriter: map keys sorted (their order does not change the
	// size, but the encoder's path does not differ either), compact ints.
	s.enc.SetSortMapKeys(true)
	s.enc.UseCompactInts(true)
	return s
}

// Size returns the bytes of m's frame, as WriteMessage would write it.
func (s *Sizer) Size(m Message) (int, error) {
	if m == nil || New(m.Kind()) == nil {
		return 0, fmt.Errorf("%w: cannot encode %T", ErrUnknownKind, m)
	}
	s.n = prefixLen
	h := m.Head()
	// The same header as Writer.encode (TestSizerMatchesFrames).
	err := errors.Join(
		s.enc.EncodeArrayLen(headerFields),
		s.enc.EncodeUint(uint64(ProtocolVersion)),
		s.enc.EncodeUint(uint64(m.Kind())),
		s.enc.EncodeUint(h.Iteration),
		s.enc.EncodeString(h.Sender),
		s.enc.Encode(m),
	)
	if err != nil {
		return 0, fmt.Errorf("wire: encoding %s: %w", m.Kind(), err)
	}
	return int(s.n), nil
}

// sizeCount is the Sizer's writer: it counts what it is given. Floats
// recognise it and add their length without writing.
type sizeCount int

// Write implements io.Writer.
func (c *sizeCount) Write(p []byte) (int, error) { *c += sizeCount(len(p)); return len(p), nil }

// WriteByte implements io.ByteWriter, so the encoder writes to it directly.
func (c *sizeCount) WriteByte(byte) error { *c++; return nil }

// WriteString implements io.StringWriter.
func (c *sizeCount) WriteString(s string) (int, error) { *c += sizeCount(len(s)); return len(s), nil }
