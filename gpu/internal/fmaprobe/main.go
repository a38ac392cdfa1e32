// Command fmaprobe links the CPU backend's training step (every layer of the
// model zoo, the optimizers, the GEMM's pure-Go family) into a binary, so
// that gpu/cpu's TestStepNotFused can build it for arm64 and look for fused
// multiply-add instructions in cotrain's code. It is not meant to be run.
package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

func main() {
	b := cpu.NewCPU()
	p, g, m, v := gpu.Host{1}, gpu.Host{1}, gpu.Host{0}, gpu.Host{0}
	b.SGDStep(p, g, v, 0.1, 0.9, 0.01, true)
	b.AdamStep(p, g, m, v, 0.1, 0.9, 0.999, 1e-8, 0.01, 1)
	// A graph file's layers: GraphNodes reaches every layer constructor.
	if layers, err := models.DecodeGraph("[]"); err == nil {
		_, err = models.GraphNodes(layers)
		fmt.Println(err)
	}
	for _, name := range models.Names() {
		net, err := models.Build(b, name, models.Config{})
		if err != nil {
			fmt.Println(err)
			continue
		}
		net.InitParams(rand.New(rand.NewPCG(1, 2)))
		tr := solver.NewTrainer(net, solver.NewAdam(b, net.NumParams(), 0), solver.Cosine{Base: 0.1, Total: 10})
		x := make([]float32, net.In.Size())
		if _, err := tr.Step(x, []int32{0}); err != nil {
			fmt.Println(err)
		}
	}
}
