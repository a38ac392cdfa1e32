package chart

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The colours of where a device's time goes, the same in every picture
// cotrain draws: the live dashboard and the simulator's report (the CSS
// variables --compute, --comm and --wait of watch/page/index.html, which
// TestColorsMatchTheDashboard holds to these) and the PNG timelines. The
// dashboard shows communication as one part; the PNGs split it into
// shades of its colour.
var (
	Compute       = color.RGBA{0x3b, 0x7d, 0xd8, 255} // blue: forward, backward, optimizer
	Communication = color.RGBA{0xf0, 0xa0, 0x30, 255} // orange: sending (the dashboard: all communication)
	Receive       = color.RGBA{0xf6, 0xc8, 0x7a, 255} // light orange: receiving
	AirWait       = color.RGBA{0xb8, 0x6e, 0x0a, 255} // dark orange: waiting for the shared air
	Waiting       = color.RGBA{0xc8, 0xcc, 0xd4, 255} // grey: idle, waiting for the others at the barrier
	// Loss is the training loss's line, as the dashboard's --loss.
	Loss = color.RGBA{0xd8, 0x45, 0x3b, 255}
)

// Hex writes c as the dashboard's CSS does: #rrggbb.
func Hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// save draws p into a w×h PNG at path with its legend, leg (of entries
// entries), in a strip of its own to the right of the plot: outside the
// data, which a legend drawn inside the axes (gonum/plot's way) covers.
func save(p *plot.Plot, leg plot.Legend, entries int, w, h vg.Length, path string) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	var lw vg.Length
	if entries > 0 {
		lw = leg.Rectangle(dc).Size().X + 16
	}
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	if entries > 0 {
		leg.Top, leg.Left = true, true
		leg.Draw(draw.Crop(dc, w-lw+8, -8, 0, -28))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
