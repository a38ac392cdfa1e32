package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Errors. ReadFrame and the Reader wrap one of them with %w and a message
// saying what was expected and what came; test with errors.Is.
var (
	// ErrTooLarge: a frame longer than the reader's cap (refused before
	// its body is read), or a message too large to encode.
	ErrTooLarge = errors.New("wire: frame too large")
	// ErrTruncated: the stream ended inside a frame.
	ErrTruncated = errors.New("wire: truncated frame")
	// ErrVersion: the frame was written with another protocol version.
	ErrVersion = errors.New("wire: unsupported protocol version")
	// ErrUnknownKind: the frame's kind is not one of this version's.
	ErrUnknownKind = errors.New("wire: unknown message kind")
	// ErrMalformed: the body is not a well-formed message: bad msgpack,
	// wrong field types, trailing bytes.
	ErrMalformed = errors.New("wire: malformed frame")
	// ErrLength: a vector's length does not match the model (CheckLen).
	ErrLength = errors.New("wire: vector length mismatch")
)

// prefixLen is the size of the frame's length prefix.
const prefixLen = 4

// headerFields is the number of elements of the body's top-level array:
// version, kind, iteration, sender, payload.
const headerFields = 5

// WriteFrame writes m to w as one frame. It builds a new encoder each call:
// a sender of many frames should keep a Writer instead.
func WriteFrame(w io.Writer, m Message) error {
	return NewWriter(w).WriteMessage(m)
}

// ReadFrame reads one frame from r and decodes it, refusing a frame whose
// body is longer than maxSize bytes. It reads exactly one frame's bytes, so
// it can be called again on the same stream. At a clean end of stream (no
// byte of a new frame) it returns io.EOF itself. A reader of many frames
// should keep a Reader instead.
func ReadFrame(r io.Reader, maxSize int) (Message, error) {
	return NewReader(r, maxSize).ReadMessage(nil)
}

// Writer writes frames to one io.Writer, reusing its encoder and its buffer
// (which grows to the largest frame written). It is not safe for concurrent
// use: give each stream one Writer and one writing goroutine, or a lock.
type Writer struct {
	w   io.Writer
	buf frameBuf
	enc *msgpack.Encoder
}

// NewWriter returns a Writer of frames to w.
func NewWriter(w io.Writer) *Writer {
	fw := &Writer{w: w}
	fw.enc = msgpack.NewEncoder(&fw.buf)
	fw.enc.SetSortMapKeys(true) // equal messages encode to equal bytes
	fw.enc.UseCompactInts(true)
	return fw
}

// WriteMessage encodes m and writes the frame to the underlying writer in a
// single Write call. It always writes ProtocolVersion, whatever m's
// Header.Version holds.
func (w *Writer) WriteMessage(m Message) error {
	frame, err := w.encode(m)
	if err != nil {
		return err
	}
	if _, err := w.w.Write(frame); err != nil {
		return fmt.Errorf("wire: writing %s frame: %w", m.Kind(), err)
	}
	return nil
}

// AppendFrame appends m's frame to dst and returns the extended slice.
func (w *Writer) AppendFrame(dst []byte, m Message) ([]byte, error) {
	frame, err := w.encode(m)
	if err != nil {
		return dst, err
	}
	return append(dst, frame...), nil
}

// encode returns m's frame in w's buffer, valid until the next call.
func (w *Writer) encode(m Message) ([]byte, error) {
	if m == nil || New(m.Kind()) == nil {
		return nil, fmt.Errorf("%w: cannot encode %T", ErrUnknownKind, m)
	}
	w.buf.b = append(w.buf.b[:0], 0, 0, 0, 0) // the length prefix, set below
	h := m.Head()
	err := errors.Join(
		w.enc.EncodeArrayLen(headerFields),
		w.enc.EncodeUint(uint64(ProtocolVersion)),
		w.enc.EncodeUint(uint64(m.Kind())),
		w.enc.EncodeUint(h.Iteration),
		w.enc.EncodeString(h.Sender),
		w.enc.Encode(m),
	)
	if err != nil {
		return nil, fmt.Errorf("wire: encoding %s: %w", m.Kind(), err)
	}
	body := len(w.buf.b) - prefixLen
	if uint64(body) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: a %s body of %d bytes does not fit the 32-bit length prefix", ErrTooLarge, m.Kind(), body)
	}
	binary.BigEndian.PutUint32(w.buf.b, uint32(body))
	return w.buf.b, nil
}

// Reader reads frames from one io.Reader, reusing its body buffer (which
// grows to the largest frame read) and its decoder. It is not safe for
// concurrent use.
type Reader struct {
	r    io.Reader
	max  int
	body []byte
	br   bodyReader
	dec  *msgpack.Decoder
}

// NewReader returns a Reader of frames from r whose bodies are at most
// maxSize bytes.
func NewReader(r io.Reader, maxSize int) *Reader {
	fr := &Reader{r: r, max: maxSize}
	fr.dec = msgpack.NewDecoder(&fr.br)
	return fr
}

// ReadMessage reads and decodes the next frame. When reuse is a message of
// the frame's kind, the frame is decoded into it (its float vectors' arrays
// are reused when large enough) and reuse is returned; otherwise a new
// message is returned. Pass nil, or a message no longer referenced.
//
// At a clean end of stream it returns io.EOF itself; every other error wraps
// one of this package's sentinels or the reader's error.
func (r *Reader) ReadMessage(reuse Message) (Message, error) {
	var prefix [prefixLen]byte
	if n, err := io.ReadFull(r.r, prefix[:]); err != nil {
		switch {
		case err == io.EOF:
			return nil, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("%w: stream ended after %d of the %d bytes of a length prefix", ErrTruncated, n, prefixLen)
		}
		return nil, fmt.Errorf("wire: reading frame length: %w", err)
	}
	size := uint64(binary.BigEndian.Uint32(prefix[:]))
	if size > uint64(max(r.max, 0)) {
		return nil, fmt.Errorf("%w: frame of %d bytes, the cap is %d", ErrTooLarge, size, r.max)
	}
	body, err := r.readBody(int(size))
	if err != nil {
		return nil, err
	}
	return r.decode(body, reuse)
}

// readBody reads n bytes into r.body. It grows the buffer as bytes arrive
// rather than by the declared size at once, so that a peer announcing a
// large frame and sending nothing costs little memory.
func (r *Reader) readBody(n int) ([]byte, error) {
	const step = 64 << 10
	r.body = r.body[:0]
	for len(r.body) < n {
		k := len(r.body)
		want := min(n-k, max(k, step))
		if cap(r.body) < k+want {
			grown := make([]byte, k, k+want)
			copy(grown, r.body)
			r.body = grown
		}
		r.body = r.body[:k+want]
		if m, err := io.ReadFull(r.r, r.body[k:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%w: stream ended after %d of the %d bytes of a frame body", ErrTruncated, k+m, n)
			}
			return nil, fmt.Errorf("wire: reading frame body: %w", err)
		}
	}
	return r.body, nil
}

// Decode decodes one frame body (the bytes after the length prefix), with
// the same checks and errors as ReadMessage. It does not retain body.
func Decode(body []byte) (Message, error) {
	var r Reader
	r.dec = msgpack.NewDecoder(&r.br)
	return r.decode(body, nil)
}

func (r *Reader) decode(body []byte, reuse Message) (Message, error) {
	r.br = bodyReader{b: body}
	r.dec.ResetReader(&r.br)
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: empty frame body, want a header array", ErrMalformed)
	}
	c := body[0]
	var fields int
	switch {
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		var err error
		if fields, err = r.dec.DecodeArrayLen(); err != nil {
			return nil, fmt.Errorf("%w: header array: %w", ErrMalformed, err)
		}
	default:
		return nil, fmt.Errorf("%w: body starts with msgpack code 0x%02x, want an array", ErrMalformed, c)
	}
	// The version comes first so that it can be told even if a later
	// version changes everything after it.
	if fields < 1 {
		return nil, fmt.Errorf("%w: empty header array", ErrMalformed)
	}
	version, err := decodeUint(r.dec, math.MaxUint16, "protocol version")
	if err != nil {
		return nil, err
	}
	if version != uint64(ProtocolVersion) {
		return nil, fmt.Errorf("%w: the frame has version %d, this build speaks %d", ErrVersion, version, ProtocolVersion)
	}
	if fields != headerFields {
		return nil, fmt.Errorf("%w: header array of %d fields, want %d", ErrMalformed, fields, headerFields)
	}
	if err := validate(body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	k, err := decodeUint(r.dec, math.MaxUint8, "kind")
	if err != nil {
		return nil, err
	}
	kind := Kind(k)
	m := reuse
	if m != nil && m.Kind() == kind {
		m.reset()
	} else if m = New(kind); m == nil {
		return nil, fmt.Errorf("%w: kind %d, want 1 to %d", ErrUnknownKind, k, maxKind)
	}
	iter, err := decodeUint(r.dec, math.MaxUint64, "iteration")
	if err != nil {
		return nil, err
	}
	if c, _ := r.dec.PeekCode(); !msgpcode.IsString(c) {
		return nil, fmt.Errorf("%w: sender is msgpack code 0x%02x, want a string", ErrMalformed, c)
	}
	sender, err := r.dec.DecodeString()
	if err != nil {
		return nil, fmt.Errorf("%w: sender: %w", ErrMalformed, err)
	}
	if c, _ := r.dec.PeekCode(); !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return nil, fmt.Errorf("%w: %s payload is msgpack code 0x%02x, want a map", ErrMalformed, kind, c)
	}
	if err := r.dec.Decode(m); err != nil {
		return nil, fmt.Errorf("%w: %s payload: %w", ErrMalformed, kind, err)
	}
	if n := r.br.Len(); n != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the %s payload", ErrMalformed, n, kind)
	}
	*m.Head() = Header{Version: uint16(version), Iteration: iter, Sender: sender}
	return m, nil
}

// decodeUint decodes a non-negative msgpack integer of at most limit,
// refusing other types (msgpack's own DecodeUint64 reads nil as 0 and
// wraps negative numbers around).
func decodeUint(dec *msgpack.Decoder, limit uint64, what string) (uint64, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
	}
	var v uint64
	switch {
	case msgpcode.IsFixedNum(c) || c == msgpcode.Int8 || c == msgpcode.Int16 || c == msgpcode.Int32 || c == msgpcode.Int64:
		n, err := dec.DecodeInt64()
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
		}
		if n < 0 {
			return 0, fmt.Errorf("%w: %s is %d, want a non-negative integer", ErrMalformed, what, n)
		}
		v = uint64(n)
	case c == msgpcode.Uint8 || c == msgpcode.Uint16 || c == msgpcode.Uint32 || c == msgpcode.Uint64:
		if v, err = dec.DecodeUint64(); err != nil {
			return 0, fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
		}
	default:
		return 0, fmt.Errorf("%w: %s is msgpack code 0x%02x, want an integer", ErrMalformed, what, c)
	}
	if v > limit {
		return 0, fmt.Errorf("%w: %s is %d, want at most %d", ErrMalformed, what, v, limit)
	}
	return v, nil
}
