package hub_test

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/wire"
)

// newFrozenHub is newHubCore with every layer but the last trainLast (of
// those with parameters) frozen on the master net, as cotrain adapt's way
// (b) does; freeze, when set, is called instead to freeze by name.
func newFrozenHub(t testing.TB, cfg hub.Config, seed uint64, trainLast int, freeze ...string) *testCore {
	t.Helper()
	b := cpu.NewCPU()
	m, err := models.Build(b, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.InitParams(rand.New(rand.NewPCG(seed, 1)))
	if len(freeze) > 0 {
		if err := m.Freeze(freeze...); err != nil {
			t.Fatal(err)
		}
	} else {
		m.FreezeAllButLast(trainLast)
	}
	opt := solver.NewSGD(b, m.NumParams(), 0.9, 0, false)
	tr := solver.NewTrainer(m, opt, solver.Constant(0.05))
	h, err := newTestCore(cfg, hub.Model{Name: "lenet5", Trainer: tr})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFrozenBytes measures the gradient bytes up (per worker) and down (to
// all) of one iteration of cotrain adapt's way (b), lenet5 with only its
// last layer (850 of 61,706 values) learning, three workers, per codec,
// with and without overlap, and the frames they travel in (wire.Sizer).
// It checks that the session sends no more than the trainable values'
// worth, and logs the figures (go test -run TestFrozenBytes -v ./hub).
func TestFrozenBytes(t *testing.T) {
	sizer := wire.NewSizer()
	for _, codec := range []string{"none", "fp16", "int8", "topk:0.01"} {
		for _, overlap := range []bool{false, true} {
			cfg := trainConfig(3, 4)
			cfg.Compression, cfg.Overlap = codec, overlap
			h := newFrozenHub(t, cfg, 3, 1)
			n := newNet(t, h, synthetic(t, 300), 3)
			var frameUp, frameDown int64
			n.atCheck = func() {
				for _, e := range n.toHub {
					if p, ok := e.msg.(*wire.Push); ok && p.Iteration == 2 {
						sz, err := sizer.Size(p)
						if err != nil {
							t.Fatal(err)
						}
						frameUp += int64(sz)
					}
				}
			}
			// Rounds as net.run does them, looking at the hub's output
			// before the workers take it.
			n.deliver()
			for i := 0; !n.hubDone(); i++ {
				if i > 20000 {
					t.Fatal("the run does not finish")
				}
				for _, msgs := range n.inbox {
					for _, m := range msgs {
						if mg, ok := m.(*wire.Merged); ok && mg.Iteration == 2 {
							sz, err := sizer.Size(mg)
							if err != nil {
								t.Fatal(err)
							}
							frameDown += int64(sz)
						}
					}
				}
				if !n.round() {
					h.Tick()
					n.deliver()
				}
			}
			n.finish()
			for _, e := range n.events {
				if e.Kind != hub.EventMerged || e.Iteration != 2 {
					continue
				}
				up := e.BytesUp / int64(e.Workers)
				t.Logf("%-9s overlap=%-5v payload up %7d B/worker, down %7d B (3 workers); frames up %7d B/worker, down %7d B",
					codec, overlap, up, e.BytesDown, frameUp/3, frameDown)
				if up > 4*850 || e.BytesDown > 3*6*850 {
					t.Errorf("%s overlap %v: %d bytes up per worker, %d down, for 850 trainable values", codec, overlap, up, e.BytesDown)
				}
				if frameUp == 0 || frameDown == 0 {
					t.Errorf("%s overlap %v: no frames counted", codec, overlap)
				}
			}
		}
	}
}
