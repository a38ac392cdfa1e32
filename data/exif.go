package data

import (
	"bytes"
	"encoding/binary"
)

// Phones store a photo as the sensor read it and record how to turn it
// upright in the JPEG's EXIF Orientation tag (1 to 8), which Go's
// image/jpeg ignores. Loading honours it, as PIL's ImageOps.exif_transpose
// and every photo viewer do, so that a portrait photo is not trained on
// lying on its side.

// jpegOrientation returns the EXIF Orientation (1-8) of the JPEG in b, or 1
// when it has none or the EXIF data is malformed: it reads only what the
// bytes hold and never panics on a corrupt file.
func jpegOrientation(b []byte) int {
	if !bytes.HasPrefix(b, []byte{0xff, 0xd8}) {
		return 1
	}
	p := 2
	for p+4 <= len(b) && b[p] == 0xff {
		marker := b[p+1]
		if marker == 0xda || marker == 0xd9 { // start of scan, end of image: no EXIF before
			return 1
		}
		n := int(binary.BigEndian.Uint16(b[p+2:]))
		if n < 2 || p+2+n > len(b) {
			return 1
		}
		seg := b[p+4 : p+2+n]
		if marker == 0xe1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return tiffOrientation(seg[6:])
		}
		p += 2 + n
	}
	return 1
}

// tiffOrientation reads tag 0x0112 from the first IFD of a TIFF header.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	ifd := int(bo.Uint32(t[4:]))
	if ifd < 8 || ifd+2 > len(t) {
		return 1
	}
	count := int(bo.Uint16(t[ifd:]))
	for i := range count {
		e := ifd + 2 + 12*i
		if e+12 > len(t) {
			return 1
		}
		// Tag 0x0112, type SHORT (3), one value, stored in the entry.
		if bo.Uint16(t[e:]) == 0x0112 && bo.Uint16(t[e+2:]) == 3 {
			if v := int(bo.Uint16(t[e+8:])); v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}

// orient turns planes of an image w wide and h high upright as EXIF
// orientation o says, and returns them with the new width and height
// (swapped for orientations 5 to 8).
func orient(planes [][]float32, w, h, o int) ([][]float32, int, int) {
	if o <= 1 || o > 8 {
		return planes, w, h
	}
	ow, oh := w, h
	if o >= 5 {
		ow, oh = h, w
	}
	out := make([][]float32, len(planes))
	for c, src := range planes {
		dst := make([]float32, len(src))
		for y := range h {
			for x := range w {
				var dx, dy int
				switch o {
				case 2: // mirrored
					dx, dy = w-1-x, y
				case 3: // upside down
					dx, dy = w-1-x, h-1-y
				case 4: // mirrored upside down
					dx, dy = x, h-1-y
				case 5: // transposed
					dx, dy = y, x
				case 6: // needs a quarter turn clockwise
					dx, dy = h-1-y, x
				case 7: // transversed
					dx, dy = h-1-y, w-1-x
				case 8: // needs a quarter turn anticlockwise
					dx, dy = y, w-1-x
				}
				dst[dy*ow+dx] = src[y*w+x]
			}
		}
		out[c] = dst
		planes[c] = nil // the caller keeps only out: one plane of a photo less held at a time
	}
	return out, ow, oh
}
