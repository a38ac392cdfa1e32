package onnx

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// TestExportKeepsClassesAndNorm: a model's class names and input
// normalisation go out as ONNX metadata and come back on import; malformed
// metadata is refused.
func TestExportKeepsClassesAndNorm(t *testing.T) {
	f := randomFile(t, "lenet5", models.Config{Classes: 3})
	labels := []string{"ant", "bee", "cat"}
	norm := models.Norm{Mean: []float32{0.25}, Std: []float32{0.5}}
	f.Meta = models.WithNorm(models.WithLabels(f.Meta, labels), norm)
	var buf bytes.Buffer
	if err := Export(&buf, f); err != nil {
		t.Fatal(err)
	}
	g, err := Import(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got, named, err := g.Labels(); err != nil || !named || !slices.Equal(got, labels) {
		t.Errorf("labels after the round trip: %q, %v, %v", got, named, err)
	}
	if got, set, err := g.InputNorm(); err != nil || !set || !slices.Equal(got.Mean, norm.Mean) || !slices.Equal(got.Std, norm.Std) {
		t.Errorf("normalisation after the round trip: %v, %v, %v", got, set, err)
	}

	var m onnxpb.ModelProto
	if err := proto.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	// Another tool's key of the same name, without the prefix, is not ours.
	other := proto.Clone(&m).(*onnxpb.ModelProto)
	other.MetadataProps = append(other.MetadataProps, &onnxpb.StringStringEntryProto{
		Key: proto.String(models.MetaLabels), Value: proto.String(`not JSON`)})
	raw, err := proto.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := Import(bytes.NewReader(raw)); err != nil {
		t.Errorf("an unprefixed %s: %v, want it ignored", models.MetaLabels, err)
	} else if got, _, _ := g.Labels(); !slices.Equal(got, labels) {
		t.Errorf("an unprefixed %s changed the labels to %q", models.MetaLabels, got)
	}
	m.MetadataProps = append(m.MetadataProps, &onnxpb.StringStringEntryProto{
		Key: proto.String(MetaPrefix + models.MetaLabels), Value: proto.String(`["only one"]`)})
	raw, err = proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(bytes.NewReader(raw)); !errors.Is(err, ErrMalformed) {
		t.Errorf("one class name for 3 outputs: %v, want ErrMalformed", err)
	}
}
