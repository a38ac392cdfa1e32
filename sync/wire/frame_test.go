package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestRoundTrip(t *testing.T) {
	for _, want := range samples() {
		t.Run(want.Kind().String(), func(t *testing.T) {
			frame := frameBytes(t, want)
			got, err := ReadFrame(bytes.NewReader(frame), len(frame))
			if err != nil {
				t.Fatalf("ReadFrame: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip changed the message\n got %+v\nwant %+v", got, want)
			}
			// Equal messages encode to equal bytes (sorted maps).
			if again := frameBytes(t, got); !bytes.Equal(again, frame) {
				t.Errorf("re-encoding gave different bytes")
			}
		})
	}
}

// TestWriteIgnoresHeaderVersion: the writer always writes the version it
// speaks, so a message read from an older peer cannot be forwarded with a
// stale version.
func TestWriteIgnoresHeaderVersion(t *testing.T) {
	m := &ResyncRequest{Header: Header{Version: 99, Iteration: 3}}
	got, err := ReadFrame(bytes.NewReader(frameBytes(t, m)), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Head().Version; v != ProtocolVersion {
		t.Errorf("version read back %d, want %d", v, ProtocolVersion)
	}
}

// TestConsecutiveFrames: ReadFrame reads exactly one frame, so frames
// written back to back come out in order, then io.EOF.
func TestConsecutiveFrames(t *testing.T) {
	var stream bytes.Buffer
	w := NewWriter(&stream)
	want := samples()
	for _, m := range want {
		if err := w.WriteMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	r := bytes.NewReader(stream.Bytes())
	for i, m := range want {
		got, err := ReadFrame(r, 1<<20)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.Kind() != m.Kind() {
			t.Fatalf("frame %d is a %s, want a %s", i, got.Kind(), m.Kind())
		}
	}
	if _, err := ReadFrame(r, 1<<20); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF itself", err)
	}
}

// TestReuse: decoding into a message of the same kind reuses its vector and
// clears every field the new frame does not set.
func TestReuse(t *testing.T) {
	var stream bytes.Buffer
	w := NewWriter(&stream)
	first := &Merged{Gradient: make(Floats, 100), BatchSizes: BatchSizes{"a": 1}, LR: 1}
	second := &Merged{Gradient: make(Floats, 60), Header: Header{Iteration: 2}}
	for _, m := range []Message{first, second, &Reject{Code: "x"}} {
		if err := w.WriteMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(&stream, 1<<20)
	m1, err := r.ReadMessage(nil)
	if err != nil {
		t.Fatal(err)
	}
	arr := &m1.(*Merged).Gradient[0]
	m2, err := r.ReadMessage(m1)
	if err != nil {
		t.Fatal(err)
	}
	got := m2.(*Merged)
	if m2 != m1 || &got.Gradient[0] != arr {
		t.Errorf("the message or its gradient array was not reused")
	}
	second.Version = ProtocolVersion
	if len(got.Gradient) != 60 || got.BatchSizes != nil || got.LR != 0 || got.Iteration != 2 {
		t.Errorf("reused message holds %+v, want %+v", got, second)
	}
	m3, err := r.ReadMessage(m2) // another kind: a fresh message
	if err != nil {
		t.Fatal(err)
	}
	if m3.Kind() != KindReject {
		t.Errorf("got a %s, want a reject", m3.Kind())
	}
}

// frame prefixes body with its length.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// raw is a piece of hand-written msgpack for packed.
type raw []byte

// packed msgpack-encodes the values one after another, copying raw ones.
func packed(t testing.TB, vs ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	for _, v := range vs {
		if r, ok := v.(raw); ok {
			b.Write(r)
			continue
		}
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestMalformed(t *testing.T) {
	push := frameBytes(t, &Push{Samples: 3, Gradient: Floats{1, 2}})
	pushBody := push[4:]
	fields := func(version, kind, iter, sender, payload any) []byte {
		return packed(t, []any{version, kind, iter, sender, payload})
	}
	deep := append(bytes.Repeat([]byte{0x91}, 100_000), 0xc0)
	v := int(ProtocolVersion)
	tests := []struct {
		name    string
		stream  []byte
		max     int
		want    error
		message string // a part of the error text
	}{
		{"empty stream", nil, 100, io.EOF, "EOF"},
		{"short prefix", []byte{0, 0}, 100, ErrTruncated, "2 of the 4 bytes"},
		{"over the cap", binary.BigEndian.AppendUint32(nil, 1<<31), 1 << 20, ErrTooLarge, "2147483648 bytes, the cap is 1048576"},
		{"short body", push[:len(push)-3], 1 << 20, ErrTruncated, "of a frame body"},
		{"empty body", frame(nil), 100, ErrMalformed, "empty frame body"},
		{"body not an array", frame(packed(t, "hello")), 100, ErrMalformed, "want an array"},
		{"empty header", frame(packed(t, []any{})), 100, ErrMalformed, "empty header"},
		{"newer version", frame(fields(int(ProtocolVersion)+1, 3, 0, "", map[string]any{})), 100, ErrVersion, fmt.Sprintf("version %d, this build speaks %d", ProtocolVersion+1, ProtocolVersion)},
		{"version 1 (before ZeroParts)", frame(fields(1, 3, 0, "", map[string]any{})), 100, ErrVersion, "version 1, this build speaks"},
		{"version 0", frame(fields(0, 3, 0, "", map[string]any{})), 100, ErrVersion, "version 0"},
		{"version a string", frame(fields("1", 3, 0, "", map[string]any{})), 100, ErrMalformed, "want an integer"},
		{"short header", frame(packed(t, []any{v, 3, 0, ""})), 100, ErrMalformed, "4 fields, want 5"},
		{"unknown kind", frame(fields(v, 10, 0, "", map[string]any{})), 100, ErrUnknownKind, "kind 10"},
		{"kind 0", frame(fields(v, 0, 0, "", map[string]any{})), 100, ErrUnknownKind, "kind 0"},
		{"kind over a byte", frame(fields(v, 300, 0, "", map[string]any{})), 100, ErrMalformed, "kind is 300"},
		{"negative iteration", frame(fields(v, 3, -1, "", map[string]any{})), 100, ErrMalformed, "iteration is -1"},
		{"iteration nil", frame(fields(v, 3, nil, "", map[string]any{})), 100, ErrMalformed, "iteration is msgpack code 0xc0"},
		{"sender an int", frame(fields(v, 3, 0, 7, map[string]any{})), 100, ErrMalformed, "want a string"},
		{"payload an array", frame(fields(v, 3, 0, "", []any{1})), 100, ErrMalformed, "want a map"},
		{"samples a string", frame(fields(v, 3, 0, "", map[string]any{"samples": "many"})), 100, ErrMalformed, "push payload"},
		{"gradient an array", frame(fields(v, 3, 0, "", map[string]any{"grad": []float32{1}})), 100, ErrMalformed, "push payload"},
		{"gradient of 7 bytes", frame(fields(v, 3, 0, "", map[string]any{"grad": make([]byte, 7)})), 100, ErrMalformed, "7 bytes is not a multiple of 4"},
		{"hash of 31 bytes", frame(fields(v, 4, 0, "", map[string]any{"weights_hash": make([]byte, 31)})), 100, ErrMalformed, "hash of 31 bytes"},
		{"batch size twice", frame(packed(t, raw{0x95}, v, 4, 0, "", raw{0x81}, "batches", raw{0x82}, "a", 1, "a", 2)), 100, ErrMalformed, "given twice"},
		{"trailing garbage", frame(append(bytes.Clone(pushBody), 0xc0)), 1 << 20, ErrMalformed, "1 bytes of trailing garbage"},
		// A bin header claiming 4 GiB inside a small frame: refused by
		// validate before the decoder allocates.
		{"lying bin length", frame(packed(t, raw{0x95}, v, 2, 0, "", raw{0x81}, "model_config", raw{0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2})), 100, ErrMalformed, "declares 4294967295 bytes"},
		{"lying array length", frame(packed(t, raw{0x95}, v, 1, 0, "", raw{0x81}, "info", raw{0xdf, 0xff, 0xff, 0xff, 0xff})), 100, ErrMalformed, "declares 8589934590 values"},
		{"deep nesting", frame(packed(t, raw{0x95}, v, 1, 0, "", raw{0x81}, "info", raw(deep))), 1 << 20, ErrMalformed, "nest deeper than 32"},
		{"reserved code", frame(packed(t, raw{0x95}, v, 1, 0, "", raw{0xc1})), 100, ErrMalformed, "invalid msgpack code 0xc1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ReadFrame(bytes.NewReader(tt.stream), tt.max)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ReadFrame = %v, %v; want %v", m, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not say %q", err, tt.message)
			}
			if m != nil {
				t.Errorf("a message came with the error: %v", m)
			}
		})
	}
}

// TestTooLargeAllocatesNothing: a frame over the cap is refused after its
// 4-byte prefix, before any body is read or allocated.
func TestTooLargeAllocatesNothing(t *testing.T) {
	prefix := binary.BigEndian.AppendUint32(nil, 1<<30)
	r := NewReader(nil, 1<<20)
	allocs := testing.AllocsPerRun(10, func() {
		r.r = bytes.NewReader(prefix)
		if _, err := r.ReadMessage(nil); !errors.Is(err, ErrTooLarge) {
			t.Fatal(err)
		}
	})
	if r.body != nil {
		t.Errorf("a body buffer of %d bytes was allocated", cap(r.body))
	}
	// The allocations are the error value and its text, not the body. The
	// race detector adds its own (7 in all there): the count is checked
	// without it, the body above with it too.
	if allocs > 6 && !raceEnabled {
		t.Errorf("%v allocations per refused frame", allocs)
	}
}

// errReader fails every read with its error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestReaderErrorsPassThrough: an I/O error of the stream is wrapped, not
// disguised as a protocol error.
func TestReaderErrorsPassThrough(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := ReadFrame(errReader{boom}, 100)
	if !errors.Is(err, boom) || errors.Is(err, ErrMalformed) {
		t.Errorf("ReadFrame = %v, want it to wrap %v", err, boom)
	}
	_, err = ReadFrame(io.MultiReader(bytes.NewReader([]byte{0, 0, 0, 9, 1}), errReader{boom}), 100)
	if !errors.Is(err, boom) {
		t.Errorf("ReadFrame mid-body = %v, want it to wrap %v", err, boom)
	}
}

// TestDecodeBody: Decode checks a body just as ReadFrame does.
func TestDecodeBody(t *testing.T) {
	want := samples()[2]
	got, err := Decode(frameBytes(t, want)[4:])
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Decode = %+v, %v; want %+v", got, err, want)
	}
	if _, err := Decode([]byte{0x95}); !errors.Is(err, ErrMalformed) {
		t.Errorf("Decode of a truncated body: %v, want ErrMalformed", err)
	}
}

// TestAppendFrame: AppendFrame gives the bytes WriteMessage writes.
func TestAppendFrame(t *testing.T) {
	m := samples()[3]
	got, err := NewWriter(nil).AppendFrame([]byte("x"), m)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte("x"), frameBytes(t, m)...); !bytes.Equal(got, want) {
		t.Errorf("AppendFrame differs from WriteMessage")
	}
	if err := WriteFrame(io.Discard, nil); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("WriteFrame(nil) = %v, want ErrUnknownKind", err)
	}
}
