package models

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// hugeTensorFile returns the start of a weight file whose one tensor has the
// given dimensions, cut right after them: the reader must decide from the
// dimensions alone, before any data.
func hugeTensorFile(t *testing.T, dims ...uint32) []byte {
	t.Helper()
	var buf bytes.Buffer
	f := &File{Model: "lenet5", Params: []NamedTensor{{Name: "huge", Dims: []int{1, 1}, Data: []float32{0}}}}
	if err := Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	// The tensor's record: its name, then the count of dimensions and each.
	rec := []byte("huge")
	rec = binary.LittleEndian.AppendUint32(rec, 2)
	rec = binary.LittleEndian.AppendUint32(rec, 1)
	rec = binary.LittleEndian.AppendUint32(rec, 1)
	raw := buf.Bytes()
	at := bytes.Index(raw, rec)
	if at < 0 || bytes.Index(raw[at+1:], rec) >= 0 {
		t.Fatalf("the tensor record is not found once in the encoded file")
	}
	out := append([]byte(nil), raw[:at+4]...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(dims)))
	for _, d := range dims {
		out = binary.LittleEndian.AppendUint32(out, d)
	}
	return out
}

// A tensor over 2 GiB is refused with ErrTooLarge on a 32-bit build (run
// this test under qemu-arm, as .ci/run does) and read on as a normal, here
// truncated, file on a 64-bit one; over 2^31 elements it is corrupt on both.
func TestWeightsTensorSizeLimits(t *testing.T) {
	is32 := strconv.IntSize == 32
	for _, tc := range []struct {
		name     string
		dims     []uint32
		want     error // on a 64-bit build
		want32   error // on a 32-bit build
		text32   string
		wantText string
	}{
		{"just under 2 GiB", []uint32{1 << 14, 1<<15 - 1}, ErrTruncated, ErrTruncated, "", ""},
		{"exactly 2 GiB", []uint32{1 << 14, 1 << 15}, ErrTruncated, ErrTooLarge, "takes 2147483648 bytes", ""},
		{"4 GiB", []uint32{1 << 15, 1 << 15}, ErrTruncated, ErrTooLarge, "of shape [32768 32768]", ""},
		{"over 2^31 elements", []uint32{1 << 16, 1<<15 + 1}, ErrCorrupt, ErrCorrupt, "", "dimension 32769"},
		{"a dimension over 2^31", []uint32{1 << 31}, ErrTruncated, ErrTooLarge, "", ""},
		{"a dimension of 2^32-1", []uint32{1<<32 - 1}, ErrCorrupt, ErrCorrupt, "", "dimension 4294967295"},
	} {
		want, text := tc.want, tc.wantText
		if is32 {
			want = tc.want32
			if tc.text32 != "" {
				text = tc.text32
			}
		}
		_, err := Read(bytes.NewReader(hugeTensorFile(t, tc.dims...)))
		if !errors.Is(err, want) || !strings.Contains(err.Error(), text) {
			t.Errorf("%s (%d-bit): got %v, want %v containing %q", tc.name, strconv.IntSize, err, want, text)
		}
	}
}
