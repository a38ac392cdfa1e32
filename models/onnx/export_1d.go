package onnx

import (
	"github.com/cotrain/cotrain/solver"
)

// Exporting 1-D networks. The importer reads PyTorch's Conv1d, MaxPool1d,
// AvgPool1d, BatchNorm1d and AdaptiveAvgPool1d(1) over N×C×L as the 2-D
// layers over N×C×1×L (ops_1d.go), and har-cnn is built the same way. The
// exporter writes such a network back as PyTorch would: an N×C×L input,
// 1-D kernel_shape, strides and pads, O×C×k convolution weights, and
// N×C×L activations between them; so it reads in PyTorch and ONNX Runtime as
// a 1-D model, and import → export → import gives the same layers and bits.

// is1D reports whether a network of input in and layers nodes is 1-D: an
// input of C×1×L (L > 1) and every convolution and pooling window 1×k,
// with no stride or padding along the unit height, and no layer that
// needs four dimensions (LRN). Such a network computes along L only, so
// writing it 1-D is exact.
func is1D(in solver.Shape, nodes []solver.Node) bool {
	if in.H != 1 || in.W < 2 {
		return false
	}
	for _, nd := range nodes {
		switch l := nd.Layer.(type) {
		case *solver.Conv2D:
			if c := l.Cfg; c.KH != 1 || c.StrideH != 1 || c.PadH != 0 {
				return false
			}
		case *solver.DilatedConv2D:
			if c := l.Cfg; c.KH != 1 || c.StrideH != 1 || c.PadH != 0 || l.DH != 1 {
				return false
			}
		case *solver.ConvTranspose2D:
			if c := l.Cfg; c.KH != 1 || c.StrideH != 1 || c.PadH != 0 || l.OutPadH != 0 || l.DH > 1 {
				return false
			}
		case *solver.Pool2D:
			if c := l.Cfg; l.Kind() != "globalavgpool" && (c.KH != 1 || c.StrideH != 1 || c.PadH != 0) {
				return false
			}
		case *solver.LRN:
			return false
		case *solver.Resample:
			if len(l.In) != 3 || l.In[1] != 1 || l.Out[1] != 1 {
				return false // a resample of the unit height is not 1-D
			}
		}
	}
	return true
}

// conv1DWeights names the weights to write as O×C×k: those of every
// convolution of a 1-D network.
func (e *exporter) conv1DWeights(nodes []solver.Node) map[string]bool {
	out := map[string]bool{}
	if !e.oneD {
		return out
	}
	for _, nd := range nodes {
		switch nd.Layer.(type) {
		case *solver.Conv2D, *solver.DilatedConv2D, *solver.ConvTranspose2D:
			out[nd.Layer.Name()+".weight"] = true
		}
	}
	return out
}

// align1D gives a 1-D network's convolutions, pools and batch norms their
// input as N×C×L where a structural layer left it N×C×1×L.
func (e *exporter) align1D(l solver.Layer, xs []string, xd [][]int) {
	switch l.(type) {
	case *solver.Conv2D, *solver.DilatedConv2D, *solver.ConvTranspose2D, *solver.Pool2D, *solver.BatchNorm:
		if d := xd[0]; len(d) == 3 && d[1] == 1 {
			want := []int{d[0], d[2]}
			xs[0], xd[0] = e.ensure(xs[0], d, want, l.Name()+".in"), want
		}
	}
}

// conv1D writes a 1×k convolution of a 1-D network as Conv1d's Conv.
func (e *exporter) conv1D(l *solver.Conv2D, xs []string) string {
	c, name := l.Cfg, l.Name()
	ins := []string{xs[0], name + ".weight"}
	if !c.NoBias {
		ins = append(ins, name+".bias")
	}
	return e.node("Conv", name, ins, attrInts("kernel_shape", c.KW), attrInts("strides", c.StrideW),
		attrInts("pads", c.PadW, c.PadW), attrInts("dilations", 1), attrInt("group", c.Groups))
}

// pool1D writes a 1×k pool of a 1-D network as MaxPool1d's MaxPool or
// AvgPool1d's AveragePool, and global average pooling as
// AdaptiveAvgPool1d(1)'s GlobalAveragePool (N×C×1).
func (e *exporter) pool1D(l *solver.Pool2D, xs []string) string {
	c, name := l.Cfg, l.Name()
	switch l.Kind() {
	case "globalavgpool":
		return e.node("GlobalAveragePool", name, xs)
	case "maxpool2d":
		return e.node("MaxPool", name, xs, poolDilations(c, attrInts("kernel_shape", c.KW), attrInts("strides", c.StrideW),
			attrInts("pads", c.PadW, c.PadW), attrInt("ceil_mode", b2i(c.CeilMode)))...)
	}
	return e.node("AveragePool", name, xs, poolDilations(c, attrInts("kernel_shape", c.KW), attrInts("strides", c.StrideW),
		attrInts("pads", c.PadW, c.PadW), attrInt("ceil_mode", b2i(c.CeilMode)),
		attrInt("count_include_pad", b2i(c.CountIncludePad)))...)
}
