package onnx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
	"google.golang.org/protobuf/proto"
)

// The fixtures of testdata/opsets are written by scripts/onnx_opsets.py.
const opsetsDir = "testdata/opsets"

// TestEveryOpset imports one graph written in the spelling of each opset
// from 7 to 21 (Pad, Split, ReduceMean, ReduceSum, Squeeze, Unsqueeze,
// Clip, BatchNormalization, Dropout, Reshape and Shape change form across
// them) and compares its output with PyTorch's to a relative 1e-4.
func TestEveryOpset(t *testing.T) {
	x, _ := readNPY(t, filepath.Join(opsetsDir, "ops.x.npy"))
	want, _ := readNPY(t, filepath.Join(opsetsDir, "ops.y.npy"))
	for op := MinOpset; op <= MaxOpset; op++ {
		t.Run(fmt.Sprintf("opset%d", op), func(t *testing.T) {
			f, err := ImportFile(filepath.Join(opsetsDir, fmt.Sprintf("ops_op%d.onnx", op)))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.MetaValue("onnx.opset"); got != strconv.Itoa(op) {
				t.Errorf("onnx.opset %q, want %d", got, op)
			}
			net, err := f.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(forward(net, x), want); !(e <= 1e-4) {
				t.Errorf("relative error %.3g > 1e-4", e)
			}
		})
	}
}

// TestOpsetOutOfRange: an opset outside 7..21 is refused with the range
// and what to do.
func TestOpsetOutOfRange(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(opsetsDir, "ops_op7.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opset int64
		want  string
	}{{6, "convert_version"}, {1, "older than 7"}, {22, "opset_version=20"}} {
		var m onnxpb.ModelProto
		if err := proto.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		m.GetOpsetImport()[0].Version = proto.Int64(tc.opset)
		b, err := proto.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Import(bytes.NewReader(b))
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("opset %d: %v, want ErrUnsupported saying %q", tc.opset, err, tc.want)
		}
	}
}

// TestExternalData imports what today's torch.onnx.export writes (opset 20,
// weights in cnn_op20.onnx.data), predicts PyTorch's output to 1e-4 and
// fine-tunes a step whose loss on the batch falls.
func TestExternalData(t *testing.T) {
	path := filepath.Join(opsetsDir, "cnn_op20.onnx")
	f, err := ImportFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := readNPY(t, filepath.Join(opsetsDir, "cnn_op20.x.npy"))
	want, _ := readNPY(t, filepath.Join(opsetsDir, "cnn_op20.y.npy"))
	net, err := f.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(forward(net, x), want); !(e <= 1e-4) {
		t.Errorf("relative error %.3g > 1e-4", e)
	}
	stepLowersLoss(t, net, x, []int32{1, 4}, 0.05)

	// Read from a stream, the model cannot reach its data file: refused,
	// naming the file.
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := Import(fh); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"cnn_op20.onnx.data"`) {
		t.Errorf("Import of a model with external data: %v, want ErrUnsupported naming cnn_op20.onnx.data", err)
	}
}

// TestExternalDataOutsideFolder: a location that leaves the model's folder
// (absolute, through "..", or through a symbolic link) and a range past the
// end of the file are refused, naming the location, before anything is
// read or allocated.
func TestExternalDataOutsideFolder(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(opsetsDir, "cnn_op20.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(opsetsDir, "cnn_op20.onnx.data"))
	if err != nil {
		t.Fatal(err)
	}
	top := t.TempDir()
	outside := filepath.Join(top, "secret.data")
	if err := os.WriteFile(outside, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "model")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.data"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../ok.data", filepath.Join(dir, "sub", "inside.data")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, loc, offset, length string
		ok                        bool
		want                      string
	}{
		{name: "plain", loc: "ok.data", ok: true},
		{name: "symlink within", loc: "sub/inside.data", ok: true},
		{name: "absolute", loc: outside, want: "absolute"},
		{name: "dotdot", loc: "../secret.data", want: "leaves the folder"},
		{name: "dotdot inside", loc: "sub/../../secret.data", want: "leaves the folder"},
		{name: "symlink out", loc: "link.data", want: "escapes"},
		{name: "missing", loc: "none.data", want: "none.data"},
		{name: "offset past end", loc: "ok.data", offset: "1000000", want: "past the end"},
		{name: "huge offset", loc: "ok.data", offset: "9223372036854775807", want: "past the end"},
		{name: "negative offset", loc: "ok.data", offset: "-4", want: "offset -4"},
		{name: "wrong length", loc: "ok.data", length: "12", want: "length 12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m onnxpb.ModelProto
			if err := proto.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			// The first initializer gets the location under test; the rest
			// keep reading ok.data at their own offsets.
			for i, p := range m.GetGraph().GetInitializer() {
				for _, kv := range p.GetExternalData() {
					switch {
					case kv.GetKey() == "location" && i == 0:
						kv.Value = proto.String(tc.loc)
					case kv.GetKey() == "location":
						kv.Value = proto.String("ok.data")
					case kv.GetKey() == "offset" && i == 0 && tc.offset != "":
						kv.Value = proto.String(tc.offset)
					case kv.GetKey() == "length" && i == 0 && tc.length != "":
						kv.Value = proto.String(tc.length)
					}
				}
			}
			b, err := proto.Marshal(&m)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "m.onnx")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := ImportFile(path)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Build(cpu.NewCPU()); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want ErrMalformed saying %q", err, tc.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tc.loc)) && tc.offset == "" && tc.length == "" {
				t.Errorf("%v does not name the location %q", err, tc.loc)
			}
		})
	}
}

// The external-data models survive the weight file format: what
// ImportFile returns is a plain weight file.
func TestExternalDataWeightFile(t *testing.T) {
	f, err := ImportFile(filepath.Join(opsetsDir, "cnn_op20.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := models.Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	if _, err := models.Read(&buf); err != nil {
		t.Fatal(err)
	}
}

// TestRefusalSaysWhereAndWhat: an operator cotrain does not read is
// refused naming it, the node's name and index, and what to do; so is a
// call of a model-local function (the dynamo exporter's) and an operator
// of another domain.
func TestRefusalSaysWhereAndWhat(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(opsetsDir, "ops_op13.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op, domain string
		function   bool
		want       []string
	}{
		{op: "GridSample", want: []string{`"clip_3" (#3 of 13, GridSample)`, "unsupported operator GridSample"}},
		{op: "Mish", want: []string{"#3 of 13", "unsupported operator Mish"}},
		{op: "If", want: []string{"control flow"}},
		{op: "Hardmax", want: []string{"Hardmax", "go doc"}},
		{op: "Clip", domain: "com.microsoft", want: []string{`domain "com.microsoft"`, "dynamo=False"}},
		{op: "MyBlock", domain: "pkg.torch", function: true, want: []string{"model-local function", "inline_local_functions"}},
	} {
		var m onnxpb.ModelProto
		if err := proto.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		n := m.GetGraph().GetNode()[3]
		n.OpType = proto.String(tc.op)
		if tc.domain != "" {
			n.Domain = proto.String(tc.domain)
		}
		if tc.function {
			m.Functions = append(m.Functions, &onnxpb.FunctionProto{Name: proto.String(tc.op), Domain: proto.String(tc.domain)})
		}
		b, err := proto.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Import(bytes.NewReader(b))
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", tc.op, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.op, err, w)
			}
		}
	}
}

// stepLowersLoss trains every layer of net one SGD step on the batch x
// with labels (learning rate lr) and checks that a second step starts from
// a lower loss than the first.
func stepLowersLoss(t *testing.T, net *solver.Net, x []float32, labels []int32, lr float32) {
	t.Helper()
	opt, err := solver.NewOptimizer(net.B, "sgd", net.Params.Len(), 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tr := solver.NewTrainer(net, opt, solver.Constant(lr))
	before, err := tr.Step(x, labels)
	if err != nil {
		t.Fatal(err)
	}
	after, err := tr.Step(x, labels)
	if err != nil {
		t.Fatal(err)
	}
	if !(after < before) {
		t.Errorf("loss %.4f after a step, %.4f before", after, before)
	}
}
