//go:build !386 && !arm && !mips && !mipsle

// The cases are issue 28's 64-bit sizes (2^60-11, 2^62+7, 2^32, ...),
// which a 32-bit int cannot hold: on a 32-bit build they do not compile,
// and such values are refused where they are decoded.

package worker

import (
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// FuzzWelcomeModel feeds arbitrary model descriptions (the Welcome's model
// name and encoded config with its meta: the graph, classes,
// normalisation) with weights of a given length to a joining worker: it
// must refuse or build, never panic nor allocate more than the weights
// sent, and what it builds holds exactly those weights. Seeded with
// LeNet-5 as a registered model and as a graph, and issue 28's conv-pads
// description.
func FuzzWelcomeModel(f *testing.F) {
	h := newFakeHub(f)
	cfg, nodes, err := models.Nodes("lenet5", models.Config{})
	if err != nil {
		f.Fatal(err)
	}
	layers, err := models.Describe(nodes)
	if err != nil {
		f.Fatal(err)
	}
	describe := func(edit func([]models.Layer)) []byte {
		l := append([]models.Layer(nil), layers...)
		edit(l)
		g, err := models.EncodeGraph(l)
		if err != nil {
			f.Fatal(err)
		}
		b, err := state.EncodeModel(cfg, [][2]string{{models.MetaGraph, g}, {models.MetaMean, "0.1307"}, {models.MetaStd, "0.3081"}})
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(true, describe(func([]models.Layer) {}), uint32(61706))
	f.Add(true, describe(func(l []models.Layer) { l[0].PH, l[0].PW = 1<<60-11, 1<<60-11 }), uint32(21386))
	f.Add(false, state.EncodeConfig(models.Config{}), uint32(61706))
	f.Fuzz(func(t *testing.T, graph bool, mcfg []byte, n uint32) {
		if n > 1<<22 {
			return // weights a real Welcome could carry; more only slows the fuzzer
		}
		w := h.welcome(1)
		w.Model, w.ModelConfig = "lenet5", mcfg
		if graph {
			w.Model = models.GraphModel
		}
		w.ModelState.Weights = make(wire.Floats, n)
		for i := range w.ModelState.Optimizer.Tensors {
			w.ModelState.Optimizer.Tensors[i].Values = make(wire.Floats, n)
		}
		c, err := NewCore(DefaultConfig(), h.tr.Net.B)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Step("hub", w); err != nil {
			return
		}
		if got := c.Trainer().Net.NumParams(); got != int(n) {
			t.Fatalf("built a net of %d parameters from a Welcome of %d weights", got, n)
		}
	})
}
