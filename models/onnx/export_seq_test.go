package onnx

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
	"google.golang.org/protobuf/proto"
)

// Export writes a language model as torch.onnx.export writes one: int64
// ids batch×T, Gather of the table, one LSTM or GRU node per layer (batch
// first), the weights in ONNX's gate order beside the PyTorch-named ones,
// and the last step's hidden state into the linear layer. (The graph's
// numbers are checked against PyTorch and against the ONNX operators'
// definitions by scripts/lm_torch.py predict: docs/text.md.)
func TestExportLanguageModels(t *testing.T) {
	for _, tc := range []struct {
		model  string
		op     string
		order  []int // the PyTorch gate of each ONNX gate block
		layers int
	}{
		{"lstm-lm", "LSTM", []int{0, 3, 1, 2}, 1},
		{"gru-lm", "GRU", []int{1, 0, 2}, 1},
	} {
		t.Run(tc.model, func(t *testing.T) {
			f := randomFile(t, tc.model, models.Config{Classes: 30, Input: solver.Shape{C: 1, H: 1, W: 6}})
			words := []string{data.Unknown}
			for i := 1; i < 30; i++ {
				words = append(words, fmt.Sprint("w", i))
			}
			v, err := data.NewVocab(words)
			if err != nil {
				t.Fatal(err)
			}
			f.Meta = models.WithVocab(nil, v)
			var buf bytes.Buffer
			if err := Export(&buf, f); err != nil {
				t.Fatal(err)
			}
			m := &onnxpb.ModelProto{}
			if err := proto.Unmarshal(buf.Bytes(), m); err != nil {
				t.Fatal(err)
			}
			g := m.GetGraph()
			in := g.GetInput()[0].GetType().GetTensorType()
			if in.GetElemType() != int32(onnxpb.TensorProto_INT64) || len(in.GetShape().GetDim()) != 2 || in.GetShape().GetDim()[1].GetDimValue() != 6 {
				t.Errorf("input %v, want int64 batch×6", in)
			}
			var ops []string
			for _, n := range g.GetNode() {
				ops = append(ops, n.GetOpType())
			}
			if want := []string{"Gather", tc.op, "Squeeze", "Gemm"}; !slices.Equal(ops, want) {
				t.Errorf("nodes %v, want %v", ops, want)
			}
			init := map[string]*onnxpb.TensorProto{}
			for _, t := range g.GetInitializer() {
				init[t.GetName()] = t
			}
			H, in0 := 128, 64
			wih, W := init["rnn.weight_ih_l0"].GetFloatData(), init["rnn.l0.W"].GetFloatData()
			if len(W) != len(wih) || !slices.Equal(init["rnn.l0.W"].GetDims(), []int64{1, int64(len(tc.order) * H), int64(in0)}) {
				t.Fatalf("W %v, %d values", init["rnn.l0.W"].GetDims(), len(W))
			}
			for k, q := range tc.order {
				if !slices.Equal(W[k*H*in0:(k+1)*H*in0], wih[q*H*in0:(q+1)*H*in0]) {
					t.Errorf("ONNX gate block %d is not PyTorch's block %d", k, q)
				}
			}
			B, bhh := init["rnn.l0.B"].GetFloatData(), init["rnn.bias_hh_l0"].GetFloatData()
			if q := tc.order[1]; !slices.Equal(B[(len(tc.order)+1)*H:(len(tc.order)+2)*H], bhh[q*H:(q+1)*H]) {
				t.Errorf("B's second recurrent bias block is not PyTorch's bias_hh block %d", q)
			}
			var vocab bool
			for _, p := range m.GetMetadataProps() {
				vocab = vocab || p.GetKey() == MetaPrefix+models.MetaVocab
			}
			if !vocab {
				t.Error("the vocabulary is not in the metadata")
			}
		})
	}
}

// A language model goes out and back in: its export imports as the same
// network (embedding, recurrent layer, linear), bit for bit, with its
// vocabulary; what the importer cannot map is refused, naming it.
func TestLanguageModelRoundTrip(t *testing.T) {
	words := []string{data.Unknown}
	for i := 1; i < 30; i++ {
		words = append(words, fmt.Sprint("w", i))
	}
	v, err := data.NewVocab(words)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]float32, 3*6)
	for i := range ids {
		ids[i] = float32((7 * i) % 30)
	}
	for _, model := range []string{"lstm-lm", "gru-lm"} {
		t.Run(model, func(t *testing.T) {
			f := randomFile(t, model, models.Config{Classes: 30, Input: solver.Shape{C: 1, H: 1, W: 6}})
			f.Meta = models.WithVocab(nil, v)
			var buf bytes.Buffer
			if err := Export(&buf, f); err != nil {
				t.Fatal(err)
			}
			back, err := Import(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if bv, err := models.Vocab(back.Meta, back.Config.Classes); err != nil || bv == nil || bv.Len() != 30 {
				t.Errorf("vocabulary after the round trip: %v, %v", bv, err)
			}
			a, err := f.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			b, err := back.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if b.In != a.In || len(b.Layers()) != 3 {
				t.Errorf("imported: input %v, layers %+v", b.In, b.Layers())
			}
			if x, y := forward(a, ids), forward(b, ids); !slices.Equal(x, y) {
				t.Errorf("logits differ after the round trip: %v vs %v", x[:3], y[:3])
			}
			// Refusals: another direction; GRU's other reset.
			m := &onnxpb.ModelProto{}
			if err := proto.Unmarshal(buf.Bytes(), m); err != nil {
				t.Fatal(err)
			}
			rnn := m.GetGraph().GetNode()[1]
			rnn.Attribute = append(rnn.Attribute, &onnxpb.AttributeProto{Name: proto.String("direction"),
				Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte("bidirectional")})
			raw, _ := proto.Marshal(m)
			if _, err := Import(bytes.NewReader(raw)); err == nil || !strings.Contains(err.Error(), "bidirectional") {
				t.Errorf("a bidirectional %s: %v", rnn.GetOpType(), err)
			}
		})
	}
}
