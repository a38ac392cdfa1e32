package data

import "math"

// resizeAA resamples src (sh×sw, values in [0,255]) to dst (dh×dw bytes)
// as torchvision's Resize(antialias=True) does with bilinear interpolation
// (torch.nn.functional.interpolate(mode="bilinear", align_corners=False,
// antialias=True), itself PIL's resampling): a separable triangle filter
// whose support widens with the reduction, so that shrinking a photo
// averages every source pixel instead of sampling a few of them (plain
// bilinear aliases a 3000-pixel photo down to 224 badly). Enlarging is
// ordinary bilinear interpolation, except that weights falling outside the
// image are dropped and the rest renormalised (PIL's edge rule). Rows are
// resampled first, in float64, and rounded to bytes only at the end;
// equal sizes copy exactly.
func resizeAA(dst []uint8, dh, dw int, src []float32, sh, sw int) {
	xs, xw := aaTaps(dw, sw)
	ys, yw := aaTaps(dh, sh)
	tmp := make([]float64, sh*dw) // rows resampled to dw columns
	for y := range sh {
		row := src[y*sw : (y+1)*sw]
		for x := range dw {
			var v float64
			for k, w := range xw[x] {
				v += float64(w * float64(row[xs[x]+k])) // float64(): not fused on any target
			}
			tmp[y*dw+x] = v
		}
	}
	for y := range dh {
		for x := range dw {
			var v float64
			for k, w := range yw[y] {
				v += float64(w * tmp[(ys[y]+k)*dw+x])
			}
			dst[y*dw+x] = uint8(min(255, max(0, math.Round(v))))
		}
	}
}

// aaTaps returns, for each of dn destination indices along one axis of sn
// source pixels, the first source index it reads and the normalised
// weights of the source pixels from there on. Destination centre d+0.5
// maps to source coordinate (d+0.5)·sn/dn; the triangle filter spans one
// source pixel each side when enlarging and scale pixels when shrinking.
func aaTaps(dn, sn int) (starts []int, weights [][]float64) {
	scale := float64(sn) / float64(dn)
	support := max(scale, 1) // the triangle's half-width, in source pixels
	starts, weights = make([]int, dn), make([][]float64, dn)
	for d := range dn {
		center := float64((float64(d) + 0.5) * scale) // rounded: not fused into the sums below
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), sn)
		w := make([]float64, max(hi-lo, 0))
		var sum float64
		for i := range w {
			w[i] = max(0, 1-math.Abs((float64(lo+i)-center+0.5)/support))
			sum += w[i]
		}
		if sum > 0 {
			for i := range w {
				w[i] /= sum
			}
		}
		starts[d], weights[d] = lo, w
	}
	return starts, weights
}
