package models

import (
	"bytes"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the weight-file reader: it must never
// panic, never allocate without bound (tensor data is read in chunks, so a
// lying size fails at the end of the input), and anything it accepts must
// write back to the same bytes.
func FuzzRead(f *testing.F) {
	net, opt := trainedLeNet(f)
	f.Add(encode(f, Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, opt)))
	small := &File{Model: "m", Config: Config{Classes: 2}, Meta: [][2]string{{"k", "v"}},
		Params: []NamedTensor{{"a.weight", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}}}}
	f.Add(encode(f, small))
	f.Add([]byte("COTRAINW"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		var again bytes.Buffer
		if err := Write(&again, got); err != nil {
			t.Fatalf("accepted file does not write back: %v", err)
		}
		if !bytes.Equal(again.Bytes(), b) {
			t.Fatalf("accepted %d bytes that write back as %d different bytes", len(b), again.Len())
		}
	})
}
