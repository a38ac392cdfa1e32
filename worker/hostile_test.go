//go:build !386 && !arm && !mips && !mipsle

// The cases are issue 28's 64-bit sizes (2^60-11, 2^62+7, 2^32, ...),
// which a 32-bit int cannot hold: on a 32-bit build they do not compile,
// and such values are refused where they are decoded.

package worker

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// hostileWelcome is a Welcome for LeNet-5 described as a graph whose
// layers edit changes, carrying weights (and momentum) of n values.
func hostileWelcome(t *testing.T, f *fakeHub, n int, edit func([]models.Layer)) *wire.Welcome {
	t.Helper()
	cfg, nodes, err := models.Nodes("lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := models.Describe(nodes)
	if err != nil {
		t.Fatal(err)
	}
	edit(layers)
	graph, err := models.EncodeGraph(layers)
	if err != nil {
		t.Fatal(err)
	}
	w := f.welcome(1)
	w.Model = models.GraphModel
	if w.ModelConfig, err = state.EncodeModel(cfg, [][2]string{{models.MetaGraph, graph}}); err != nil {
		t.Fatal(err)
	}
	w.ModelState.Weights = make(wire.Floats, n)
	for i := range w.ModelState.Optimizer.Tensors {
		w.ModelState.Optimizer.Tensors[i].Values = make(wire.Floats, n)
	}
	return w
}

// TestHostileWelcome: a hub that serves a crafted model gets a Reject that
// names what is wrong, and the worker ends without building it. Before
// issue 28 the worker built the conv-pads model (its sizes wrapped around
// to 21,386 parameters), said "joined at iteration 0" and panicked in the
// first convolution.
func TestHostileWelcome(t *testing.T) {
	f := newFakeHub(t)
	for _, tc := range []struct {
		name string
		n    int // the weights the hub sends
		edit func([]models.Layer)
		text string
	}{
		// issue 28's conv pads 2^60-11: 16·(2^59-2)² wraps to 64 inputs of
		// fc1, so LeNet-5 has 21,386 parameters to the old arithmetic.
		{"conv pads 2^60-11", 21386, func(l []models.Layer) { l[0].PH, l[0].PW = 1<<60-11, 1<<60-11 }, "pad height 1152921504606846965"},
		{"conv stride 0", 61706, func(l []models.Layer) { l[0].SH, l[0].SW = 0, 0 }, "stride height 0"},
		{"conv groups 0", 61706, func(l []models.Layer) { l[0].Groups = 0 }, "groups 0"},
		{"pool stride 0", 61706, func(l []models.Layer) { l[2].SH, l[2].SW = 0, 0 }, "stride height 0"},
		// 2^40 output units: the old worker allocated before any check.
		{"fc units 2^40", 61706, func(l []models.Layer) { l[len(l)-1].Out = 1 << 40 }, "output units 1099511627776"},
		// Within the limits, but more parameters than the weights sent:
		// refused before the net is allocated.
		{"more params than sent", 61706, func(l []models.Layer) { l[len(l)-3].Out = 1 << 20 }, "carries 61706 weights"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWorker(t)
			take(c)
			err := c.Step("hub", hostileWelcome(t, f, tc.n, tc.edit))
			if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("%v, want ErrModel saying %q", err, tc.text)
			}
			rd := take(c)
			if !rd.Done || !slices.Equal(kinds(rd.Messages), []wire.Kind{wire.KindReject}) || rd.Compute != nil {
				t.Fatalf("done %v, sent %v, compute %v; want a Reject and the end", rd.Done, kinds(rd.Messages), rd.Compute)
			}
			if msg := rd.Messages[0].(*wire.Reject).Message; !strings.Contains(msg, tc.text) {
				t.Errorf("Reject says %q, want %q", msg, tc.text)
			}
		})
	}
	// The same description unedited is a LeNet-5 the worker builds.
	c := newWorker(t)
	if err := c.Step("hub", hostileWelcome(t, f, 61706, func([]models.Layer) {})); err != nil {
		t.Fatalf("the unedited graph: %v", err)
	}
}

// TestHostileBatch: a batch size whose buffers would exceed 2^31 values
// (issue 28's size arithmetic, in a Welcome or a Merged) is refused
// before the driver sizes a buffer by it; the Merged changes nothing.
func TestHostileBatch(t *testing.T) {
	f := newFakeHub(t)
	c := newWorker(t)
	take(c)
	w := f.welcome(1 << 40)
	if err := c.Step("hub", w); !errors.Is(err, ErrBadMessage) || !strings.Contains(err.Error(), "batch 1099511627776") {
		t.Fatalf("Welcome with batch 2^40: %v, want ErrBadMessage naming the batch", err)
	}
	if rd := take(c); rd.Compute != nil {
		t.Fatalf("computing a batch of %d", rd.Compute.Batch)
	}
	c = idle(t, f)
	before := state.NetHash(c.Trainer().Net)
	m := f.merged(0.01, 1)
	m.BatchSizes["w0"] = 1 << 55 // ×784 wraps int64
	if err := c.Step("hub", m); !errors.Is(err, ErrBadMessage) || state.NetHash(c.Trainer().Net) != before {
		t.Fatalf("Merged with batch 2^55: %v, want ErrBadMessage and no change", err)
	}
	if rd := take(c); rd.Compute != nil {
		t.Fatalf("computing a batch of %d", rd.Compute.Batch)
	}
}
