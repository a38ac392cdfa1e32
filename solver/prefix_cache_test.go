package solver_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// cacheRun fine-tunes the last layer of the network nodes builds (random
// weights and batch-norm statistics) on b for epochs passes over 20
// seeded samples, shuffled each epoch, in batches of 6 (the last of each
// epoch 2), with a prefix cache of limit bytes (0: none) and the samples'
// indices as identities. It returns the losses, the weights and the net.
func cacheRun(t *testing.T, b gpu.Backend, nodes func() []solver.Node, limit, epochs int) ([]float64, []float32, *solver.Net) {
	t.Helper()
	net, err := solver.NewNet(b, solver.Shape{C: 3, H: 16, W: 16}, nodes())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	net.InitParams(r)
	randomBatchNorm(net, r)
	net.SetRand(rand.New(rand.NewPCG(9, 10)))
	net.FreezeAllButLast(1)
	net.SetPrefixCache(limit)
	tr := solver.NewTrainer(net, solver.NewSGD(net.B, net.NumParams(), 0.9, 0, false), solver.Constant(0.05))
	const samples, batch = 20, 6
	size := net.In.Size()
	data := make([]float32, samples*size)
	for i := range data {
		data[i] = 2*r.Float32() - 1
	}
	var losses []float64
	x := make([]float32, batch*size)
	labels := make([]int32, batch)
	ids := make([]int64, batch)
	for range epochs {
		perm := r.Perm(samples)
		for at := 0; at < samples; at += batch {
			n := min(batch, samples-at)
			for k := range n {
				i := perm[at+k]
				copy(x[k*size:(k+1)*size], data[i*size:(i+1)*size])
				labels[k], ids[k] = int32(i%net.Out.Size()), int64(i)
			}
			loss, err := tr.StepIDs(x[:n*size], labels[:n], ids[:n])
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, loss)
		}
	}
	return losses, download(net.B, net.Params), net
}

// mobilenetV2DropNodes is mobilenetV2Nodes with dropout before the
// classifier, as torchvision's mobilenet_v2 has it: the cache then keeps
// the dropout's input, and the dropout still draws every step.
func mobilenetV2DropNodes() []solver.Node {
	nodes := mobilenetV2Nodes()
	fc := nodes[len(nodes)-1]
	fc.Inputs = []int{len(nodes) - 1}
	nodes[len(nodes)-1] = solver.Node{Layer: solver.NewDropout("drop", 0.2), Inputs: []int{len(nodes) - 2}}
	return append(nodes, fc)
}

// TestPrefixCacheSameBits: checkPrefixCache on the CPU.
func TestPrefixCacheSameBits(t *testing.T) {
	checkPrefixCache(t, cpu.NewCPU())
}

// checkPrefixCache: three epochs of fine-tuning on b with the prefix cache
// end with the weights and losses of the same run without it, bit for bit
// (a sample's prefix output does not depend on the batch around it or its
// place there), for a ResNet and a MobileNet v2 with dropout after the
// cached features; the first epoch computes every sample and the later
// ones compute none. With room for 5 samples only, the cache keeps 5 and
// the bits are the same again.
func checkPrefixCache(t *testing.T, b gpu.Backend) {
	for _, m := range []struct {
		name  string
		nodes func() []solver.Node
	}{{"resnet", resnetNodes}, {"mobilenet-v2-dropout", mobilenetV2DropNodes}} {
		t.Run(m.name, func(t *testing.T) {
			const epochs = 3
			l0, p0, _ := cacheRun(t, b, m.nodes, 0, epochs)
			l1, p1, net := cacheRun(t, b, m.nodes, 1<<20, epochs)
			if fmt.Sprint(l0) != fmt.Sprint(l1) || !sameBits(p0, p1) {
				t.Errorf("with the cache: losses %v, without: %v (weights the same: %v)", l1, l0, sameBits(p0, p1))
			}
			st := net.PrefixCache()
			if st.RowLen == 0 || st.Samples != 20 || st.Misses != 20 || st.Hits != 20*(epochs-1) || st.Bytes != 20*4*st.RowLen {
				t.Errorf("cache %+v: want 20 samples cached, 20 computed and %d served", st, 20*(epochs-1))
			}
			row := 4 * st.RowLen
			l2, p2, small := cacheRun(t, b, m.nodes, 5*row+row/2, epochs)
			if fmt.Sprint(l0) != fmt.Sprint(l2) || !sameBits(p0, p2) {
				t.Errorf("with room for 5 samples: losses %v, without: %v", l2, l0)
			}
			if st := small.PrefixCache(); st.Samples != 5 || st.Bytes > 5*row+row/2 {
				t.Errorf("with room for 5 samples: %+v", st)
			}
			t.Logf("%d floats a sample cached; cache %+v", st.RowLen, st)
		})
	}
}

// TestPrefixCacheEmptied: whatever may change the prefix's output empties
// the cache (ParamsChanged, a freeze, the folding switch), and a network
// with nothing frozen has no frontier to cache.
func TestPrefixCacheEmptied(t *testing.T) {
	_, _, net := cacheRun(t, cpu.NewCPU(), resnetNodes, 1<<20, 1)
	for _, c := range []struct {
		name   string
		change func()
	}{
		{"ParamsChanged", net.ParamsChanged},
		{"FreezeAllButLast", func() { net.FreezeAllButLast(2) }},
		{"SetFolding", func() { net.SetFolding(false) }},
	} {
		if st := net.PrefixCache(); st.Samples == 0 {
			refill(t, net)
		}
		c.change()
		if st := net.PrefixCache(); st.Samples != 0 || st.Bytes != 0 {
			t.Errorf("after %s: %+v, want it empty", c.name, st)
		}
	}
	net.Unfreeze()
	if st := net.PrefixCache(); st.RowLen != 0 {
		t.Errorf("nothing frozen, yet a frontier of %d floats a sample", st.RowLen)
	}
}

// refill runs one training step of net on two samples with identities, so
// that its cache holds them.
func refill(t *testing.T, net *solver.Net) {
	t.Helper()
	tr := solver.NewTrainer(net, solver.NewSGD(net.B, net.NumParams(), 0, 0, false), solver.Constant(0))
	x := make([]float32, 2*net.In.Size())
	if _, err := tr.StepIDs(x, []int32{0, 1}, []int64{0, 1}); err != nil {
		t.Fatal(err)
	}
	if st := net.PrefixCache(); st.Samples != 2 {
		t.Fatalf("refilled: %+v", st)
	}
}
