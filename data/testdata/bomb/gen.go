//go:build ignore

// gen writes issue 28's PNG bomb: a valid 8-bit grayscale PNG of W×H black
// pixels whose zlib stream of zeros compresses about a thousandfold (30000×30000
// in some 875 KB). The old loader decoded it whole (4.4 GB for predict);
// today's refuses it from its header:
//
//	go run ./data/testdata/bomb/gen.go -w 30000 -h 30000 -o /tmp/bomb.png
//	/usr/bin/time -v cotrain predict --weights W --input /tmp/bomb.png
package main

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
)

func main() {
	w := flag.Int("w", 30000, "width")
	h := flag.Int("h", 30000, "height")
	out := flag.String("o", "bomb.png", "output file")
	flag.Parse()
	b := Bomb(*w, *h)
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %dx%d in %d bytes\n", *out, *w, *h, len(b))
}

// Bomb returns the PNG (the same code as data's pngBomb test helper).
func Bomb(w, h int) []byte {
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
