package models

import (
	"fmt"

	"github.com/cotrain/cotrain/internal/limits"
)

// checkLayer checks the numbers of one layer description read from a file
// or a hub's Welcome against internal/limits before any layer is made from
// it: sizes, kernels, strides and pads within limits.MaxExtent, channel and
// unit counts, dims and offsets within limits.MaxElements. Strides and
// groups of convolutions and pools must be given and positive: a
// description Describe wrote always carries them (NewConv2D and the pool
// constructors resolve their zero defaults first), so a zero there came
// from somewhere else and is refused rather than read as a default.
func checkLayer(i int, d Layer) error {
	bad := func(err error) error { return fmt.Errorf("%w: layer %d (%s): %w", ErrGraph, i, d.Name, err) }
	extent := func(what string, v int, positive bool) error {
		_, err := limits.Extent(what, int64(v), positive)
		return err
	}
	switch d.Kind {
	case "conv2d", "dilatedconv2d", "convtranspose2d", "maxpool2d", "avgpool2d":
		for _, f := range []struct {
			what     string
			v        int
			positive bool
		}{{"kernel height", d.KH, true}, {"kernel width", d.KW, true}, {"stride height", d.SH, true},
			{"stride width", d.SW, true}, {"pad height", d.PH, false}, {"pad width", d.PW, false}} {
			if err := extent(f.what, f.v, f.positive); err != nil {
				return bad(err)
			}
		}
		// A pool's dilations may be absent (0, read as 1).
		dilated := d.Kind == "dilatedconv2d"
		if err := extent("dilation height", d.DH, dilated); err != nil {
			return bad(err)
		}
		if err := extent("dilation width", d.DW, dilated); err != nil {
			return bad(err)
		}
		if d.Kind == "convtranspose2d" {
			if err := extent("output padding height", d.OPH, false); err != nil {
				return bad(err)
			}
			if err := extent("output padding width", d.OPW, false); err != nil {
				return bad(err)
			}
		}
		if d.Kind == "conv2d" || d.Kind == "dilatedconv2d" || d.Kind == "convtranspose2d" {
			if _, err := limits.Count("output channels", int64(d.Out), true); err != nil {
				return bad(err)
			}
			if _, err := limits.Count("groups", int64(d.Groups), true); err != nil {
				return bad(err)
			}
		}
	case "linear":
		if _, err := limits.Count("output units", int64(d.Out), true); err != nil {
			return bad(err)
		}
	case "prepend":
		if _, err := limits.Count("prepended slices", int64(d.Size), true); err != nil {
			return bad(err)
		}
	case "embedding":
		if _, err := limits.Count("vocabulary", int64(d.Vocab), true); err != nil {
			return bad(err)
		}
		if _, err := limits.Count("embedding dimension", int64(d.Out), true); err != nil {
			return bad(err)
		}
		// One view per row of the table is made from it: its size is
		// bounded by the elements a tensor may hold.
		if _, err := limits.Product("embedding table", d.Vocab, d.Out); err != nil {
			return bad(err)
		}
	case "lstm", "gru":
		if _, err := limits.Count("hidden units", int64(d.Out), true); err != nil {
			return bad(err)
		}
		if _, err := limits.Count("layers", int64(d.Layers), true); err != nil {
			return bad(err)
		}
		if _, err := limits.Product("recurrent weights", d.Layers, 4, d.Out, 2, d.Out); err != nil {
			return bad(err)
		}
	}
	for _, f := range []struct {
		what string
		v    []int
	}{{"dims", d.Dims}, {"dims2", d.Dims2}, {"to", d.To}, {"counts", d.Counts}, {"repeats", d.Repeats}} {
		if len(f.v) > 0 {
			if _, err := limits.Elements(f.what, f.v); err != nil {
				return bad(err)
			}
		}
	}
	// Offsets, steps and axes may be negative (slice steps, axes counted
	// from the end); their magnitude is still bounded.
	for _, f := range []struct {
		what string
		v    []int
	}{{"starts", d.Starts}, {"steps", d.Steps}, {"before", d.Before}, {"after", d.After}, {"axes", d.Axes},
		{"perm", d.Perm}, {"inputs", d.In}, {"axis", []int{d.Axis}}} {
		for _, v := range f.v {
			if int64(v) < -limits.MaxElements || int64(v) > limits.MaxElements {
				return bad(fmt.Errorf("%w: %s %d, at most %d either way", limits.ErrTooLarge, f.what, v, int64(limits.MaxElements)))
			}
		}
	}
	return nil
}
