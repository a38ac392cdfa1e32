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
	"flag"
	"fmt"
	"os"

	"github.com/cotrain/cotrain/internal/pngbomb"
)

func main() {
	w := flag.Int("w", 30000, "width")
	h := flag.Int("h", 30000, "height")
	out := flag.String("o", "bomb.png", "output file")
	flag.Parse()
	b := pngbomb.PNG(*w, *h)
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %dx%d in %d bytes\n", *out, *w, *h, len(b))
}
