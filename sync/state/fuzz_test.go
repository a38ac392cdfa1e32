package state

import (
	"slices"
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// FuzzDecodeConfig feeds arbitrary bytes to the decoder of the model config a
// hub sends in its Welcome: no panic, and what it accepts encodes back to a
// config that decodes the same.
func FuzzDecodeConfig(f *testing.F) {
	f.Add(EncodeConfig(models.Config{Classes: 10, Input: solver.Shape{C: 1, H: 28, W: 28}}))
	f.Add(EncodeConfig(models.Config{Classes: 3, Input: solver.Shape{C: 3, H: 32, W: 32}, Width: 0.25}))
	f.Add([]byte("classes=x\n"))
	f.Add([]byte("=\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeConfig(b)
		if err != nil {
			return
		}
		c2, err := DecodeConfig(EncodeConfig(c))
		if err != nil || c2 != c {
			t.Fatalf("config %+v does not round-trip: %+v, %v", c, c2, err)
		}
	})
}

// FuzzDecodeModel does the same for the config with the model's meta
// (graph, class names, normalisation) that a hub of such a model sends.
func FuzzDecodeModel(f *testing.F) {
	seed, err := EncodeModel(models.Config{Classes: 3, Input: solver.Shape{C: 3, H: 16, W: 16}},
		[][2]string{{models.MetaGraph, `[{"kind":"linear","name":"fc","out":3}]`}, {models.MetaLabels, `["ant","bee","cat"]`},
			{models.MetaMean, "0.485,0.456,0.406"}, {models.MetaStd, "0.229,0.224,0.225"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("meta.=\nmeta.x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, meta, err := DecodeModel(b)
		if err != nil {
			return
		}
		again, err := EncodeModel(c, meta)
		if err != nil {
			return // a key with '=' came through a line that split at an earlier '='
		}
		c2, meta2, err := DecodeModel(again)
		if err != nil || c2 != c || !slices.Equal(meta2, meta) {
			t.Fatalf("model %+v %q does not round-trip: %+v %q, %v", c, meta, c2, meta2, err)
		}
	})
}
