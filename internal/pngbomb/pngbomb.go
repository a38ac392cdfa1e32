// Package pngbomb makes issue 28's decompression bombs: valid 8-bit
// grayscale PNGs of w×h black pixels whose zlib stream of zeros compresses
// about a thousandfold (30000×30000 in some 875 KB). data's tests and
// data/testdata/bomb/gen.go (which writes one to a file) share it. Only
// tests and that generator import it.
package pngbomb

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// PNG returns the bomb of w×h pixels.
func PNG(w, h int) []byte {
	var idat bytes.Buffer
	z, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, 1+w) // filter type 0, then w black pixels
	for range h {
		z.Write(row)
	}
	z.Close()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.Write(&out, binary.BigEndian, c.Sum32())
	}
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, 8, 0, 0, 0, 0) // 8-bit grayscale, deflate, no interlace
	chunk("IHDR", ihdr)
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}
