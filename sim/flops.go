package sim

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// FLOPs returns the floating-point operations of one sample's forward pass
// through the named model (zero config fields take the model's defaults),
// counting a multiply-add as 2:
//
//   - convolution: 2·K·(C/G)·R·S·OH·OW, plus K·OH·OW for the bias;
//   - linear: 2·in·out, plus out for the bias;
//   - LSTM and GRU: per layer and step 2·gates·H·(in + H) for the
//     products, plus 6·gates·H for the biases and the gates' elementwise
//     work;
//   - pooling, activations, batch norm and the like: one per output element.
//
// A training step (forward and backward) costs about 3 times the forward
// pass: the backward pass computes the gradient with respect to the input
// and to the weights, each about as costly as the forward pass. TrainFLOPs
// says so.
func FLOPs(model string, c models.Config) (float64, error) {
	per, err := layerFLOPs(model, c)
	var total float64
	for _, f := range per {
		total += f
	}
	return total, err
}

// layerFLOPs returns the forward FLOPs of each layer of one sample (see
// FLOPs).
func layerFLOPs(model string, c models.Config) ([]float64, error) {
	c, nodes, err := models.Nodes(model, c)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	// NewNet sets the layers up: their geometry is known afterwards.
	net, err := solver.NewNet(cpu.NewCPU(), c.Input, nodes)
	if err != nil {
		return nil, fmt.Errorf("sim: model %s: %w", model, err)
	}
	infos := net.Layers()
	per := make([]float64, len(nodes))
	for i, nd := range nodes {
		total := 0.0
		out := float64(infos[i].Out.Size())
		switch l := nd.Layer.(type) {
		case *solver.Conv2D:
			g := l.Geom
			total += float64(2 * float64(g.K) * float64(g.C/g.Groups) * float64(g.R*g.S) * float64(g.OH*g.OW))
			if !l.Cfg.NoBias {
				total += out
			}
		case *solver.Linear:
			total += float64(2 * float64(l.In) * out) // out: Out units at every row; the conversion keeps it unfused (internal/fmacheck)
			if !l.NoBias {
				total += out
			}
		case *solver.Recurrent:
			// Per layer and step: the input and recurrent products,
			// 2·gates·H·(in + H), the biases and about 4 elementwise
			// operations per gate element.
			g := 4.0
			if l.Cell == solver.GRUCell {
				g = 3
			}
			h := float64(l.Hidden)
			for k := range l.Layers {
				in := float64(l.In)
				if k > 0 {
					in = h
				}
				total += float64(float64(l.T) * (float64(2*g*h*(in+h)) + float64(6*g*h)))
			}
		default:
			total += out
		}
		per[i] = total
	}
	return per, nil
}

// trainFLOPsFrozen is TrainFLOPs for one sample of a network whose layers
// (solver.Net.Layers) may be frozen: the forward pass runs through every
// layer, the backward pass (twice the forward's cost) only through the
// layers from the first trainable one with parameters on, since nothing
// below it needs a gradient.
func trainFLOPsFrozen(model string, c models.Config, layers []solver.LayerInfo) (float64, error) {
	per, err := layerFLOPs(model, c)
	if err != nil {
		return 0, err
	}
	first := 0
	for first < len(layers) && (layers[first].Frozen || layers[first].Params == 0) {
		first++
	}
	var fwd, bwd float64
	for i, f := range per {
		fwd += f
		if i >= first {
			bwd += 2 * f
		}
	}
	return fwd + bwd, nil
}

// TrainFLOPs returns the operations of one training step on batch samples:
// 3·FLOPs·batch (see FLOPs).
func TrainFLOPs(model string, c models.Config, batch int) (float64, error) {
	f, err := FLOPs(model, c)
	return 3 * f * float64(batch), err
}
