package models

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
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

// FuzzBuild feeds arbitrary bytes to the weight-file reader and builds
// what it accepts (File.Build: the registered model or the stored graph,
// every size through internal/limits, the tensors compared with the
// layout before anything is allocated): it must never panic, and a net it
// builds holds the file's tensors.
func FuzzBuild(f *testing.F) {
	net, opt := trainedLeNet(f)
	f.Add(encode(f, Snapshot("lenet5", Config{Classes: 10, Input: net.In}, net, opt)))
	graph := func(edit func([]Layer), params []NamedTensor) []byte {
		c, nodes, err := Nodes("lenet5", Config{})
		if err != nil {
			f.Fatal(err)
		}
		layers, err := Describe(nodes)
		if err != nil {
			f.Fatal(err)
		}
		edit(layers)
		g, err := EncodeGraph(layers)
		if err != nil {
			f.Fatal(err)
		}
		return encode(f, &File{Model: GraphModel, Config: c, Meta: [][2]string{{MetaGraph, g}}, Params: params})
	}
	f.Add(graph(func([]Layer) {}, lenetTensors(400)))
	f.Add(graph(func(l []Layer) { l[0].PH, l[0].PW = 1<<60-11, 1<<60-11 }, lenetTensors(64)))
	f.Add(graph(func(l []Layer) { l[0].SH = 0 }, lenetTensors(400)))
	if raw, err := os.ReadFile("testdata/inception_lite_v1_nometa.ctw"); err == nil {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The checksum is made to fit, so that mutations of the body (the
		// graph's JSON, the config, the dims) reach Build instead of
		// failing the CRC.
		if len(b) >= 12 {
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
		}
		file, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		net, err := file.Build(cpu.NewCPU())
		if err != nil {
			return
		}
		if len(file.Params) != len(net.Tensors()) {
			t.Fatalf("built %d tensors from a file of %d", len(net.Tensors()), len(file.Params))
		}
	})
}
