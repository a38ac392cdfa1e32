package models

import (
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/solver"
)

// FuzzGraph builds networks from graph descriptions, which come from weight
// files and from a hub's Welcome: whatever the description says, building
// the network either fails with an error or gives one that runs a forward
// and backward pass; it never panics.
func FuzzGraph(f *testing.F) {
	for _, s := range []string{
		`[{"kind":"transpose","name":"t","dims":[2,3,4],"perm":[0,2,1]},{"kind":"flatten","name":"f"},{"kind":"linear","name":"l","out":3}]`,
		`[{"kind":"reshape","name":"r","to":[2,12]},{"kind":"slice","name":"s","dims":[2,12],"starts":[0,1],"steps":[1,2],"counts":[2,5]},{"kind":"pad","name":"p","dims":[2,5],"before":[0,1],"after":[1,0]},{"kind":"flatten","name":"f"},{"kind":"linear","name":"l","out":2}]`,
		`[{"kind":"conv2d","name":"c","out":4,"kh":1,"kw":1,"sh":1,"sw":1},{"kind":"reduce","name":"m","dims":[4,3,4],"axes":[1,2],"mean":true},{"kind":"sigmoid","name":"g"},{"kind":"binary","name":"x","op":"Mul","dims":[4,3,4],"dims2":[4,1,1],"in":[0,2]},{"kind":"concatnd","name":"cat","axis":0,"dims":[4,3,4],"in":[3,0]},{"kind":"globalavgpool","name":"gap"},{"kind":"flatten","name":"f"},{"kind":"linear","name":"l","out":3},{"kind":"softmax","name":"sm","dims":[3],"axes":[0]}]`,
		`[{"kind":"binary","name":"b","op":"Add","dims":[2,3,4],"dims2":[1,1,4],"const":[1,2,3,4],"first":true},{"kind":"clip","name":"c","min":0},{"kind":"hardsigmoid","name":"h","alpha":0.2,"beta":0.5},{"kind":"flatten","name":"f"},{"kind":"linear","name":"l","out":2}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		layers, err := DecodeGraph(raw)
		if err != nil {
			return
		}
		nodes, err := GraphNodes(layers)
		if err != nil {
			return
		}
		b := gpu.NewCPU()
		net, err := solver.NewNet(b, solver.Shape{C: 2, H: 3, W: 4}, nodes)
		if err != nil {
			return
		}
		if net.NumParams() > 1<<16 || net.Out.Size() > 1<<16 {
			return // runs, but too slowly for fuzzing
		}
		const batch = 2
		x := b.Alloc(batch * net.In.Size())
		b.Fill(x, 0.5)
		net.Forward(x, batch, true)
		dy := b.Alloc(batch * net.Out.Size())
		b.Fill(dy, 0.1)
		net.Backward(dy)
	})
}
