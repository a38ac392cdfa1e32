package models

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestLongStringsVersion2: a file whose graph description exceeds version
// 1's 64 KiB string limit (DenseNet-121's is 469 KB) is written as version
// 2 and read back whole; a file without such a string is still written as
// version 1, which every cotrain reads.
func TestLongStringsVersion2(t *testing.T) {
	net, opt := trainedLeNet(t)
	small := Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, opt)
	raw := encode(t, small)
	if v := binary.LittleEndian.Uint32(raw[8:]); v != 1 {
		t.Errorf("a file of short strings is version %d, want 1", v)
	}
	layers := make([]Layer, 20000)
	for i := range layers {
		layers[i] = Layer{Kind: "relu", Name: "densenet.features.block" + strings.Repeat("x", 5)}
	}
	graph, err := EncodeGraph(layers)
	if err != nil {
		t.Fatal(err)
	}
	if len(graph) < 469075 {
		t.Fatalf("description of %d bytes, want DenseNet-121's 469075 or more", len(graph))
	}
	big := Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, opt)
	big.Meta = append(big.Meta, [2]string{MetaGraph, graph})
	raw = encode(t, big)
	if v := binary.LittleEndian.Uint32(raw[8:]); v != 2 {
		t.Errorf("a file with a %d-byte string is version %d, want 2", len(graph), v)
	}
	back, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if back.MetaValue(MetaGraph) != graph {
		t.Error("the description read back differs")
	}
	// The same bytes declared version 1 are refused at the long string.
	v1 := bytes.Clone(raw)
	binary.LittleEndian.PutUint32(v1[8:], 1)
	if _, err := Read(bytes.NewReader(v1)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "version 1 holds at most 65536") {
		t.Errorf("a long string in a version-1 file: %v, want ErrCorrupt", err)
	}
}

// TestLongStringLimit: a version-2 file claiming a string over 64 MiB is
// refused before anything is allocated for it, and one claiming 60 MiB
// that the file does not hold is truncated, not a 60 MiB allocation up
// front (the string is read in 64 KiB chunks).
func TestLongStringLimit(t *testing.T) {
	head := func(n uint32) []byte {
		b := []byte(magic)
		b = binary.LittleEndian.AppendUint32(b, 2)
		b = binary.LittleEndian.AppendUint32(b, n) // the model name's length
		return append(b, "lenet5"...)
	}
	if _, err := Read(bytes.NewReader(head(1 << 30))); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "at most 67108864") {
		t.Errorf("a 1 GiB string: %v, want ErrCorrupt", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Read(bytes.NewReader(head(60 << 20))); !errors.Is(err, ErrTruncated) {
		t.Errorf("a 60 MiB string in a short file: %v, want ErrTruncated", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("reading a short file that claims a 60 MiB string allocated %d bytes", got)
	}
}
