package chart

import (
	"bytes"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestColorsMatchTheDashboard holds the PNGs' colours to the dashboard's
// CSS: compute, communication and waiting look the same on the live page,
// in the simulator's report and in its plots.
func TestColorsMatchTheDashboard(t *testing.T) {
	page, err := os.ReadFile("../../../watch/page/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]color.RGBA{"--compute": Compute, "--comm": Communication, "--wait": Waiting, "--loss": Loss} {
		m := regexp.MustCompile(name + `:(#[0-9a-f]{6});`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("watch/page/index.html sets no %s", name)
		}
		if got := string(m[1]); got != Hex(c) {
			t.Errorf("%s is %s on the dashboard, %s in the PNGs", name, got, Hex(c))
		}
	}
}

// TestLegendOutsideTheData: the timeline's legend is drawn right of the
// plot, so the rightmost strip of the image holds legend colours and the
// plot's own area ends before it; no pixel of a legend swatch lies over
// the bars.
func TestLegendOutsideTheData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.png")
	kinds := []Kind{{"compute", Compute}, {"sending", Communication}}
	// One row busy computing the whole time: a legend drawn inside the
	// axes would cover part of it.
	if err := TimelinePlot(path, "t", "s", []string{"phone"}, kinds, "idle", []Span{{0, 0, 0, 10}, {0, 1, 4, 5}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	same := func(x, y int, c color.RGBA) bool {
		r, g, bl, _ := img.At(x, y).RGBA()
		return uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(bl>>8) == c.B
	}
	// The columns with compute's blue: the bar, then (after a gap) the
	// legend's swatch.
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	var cols []bool
	for x := range w {
		blue := false
		for y := range h {
			if same(x, y, Compute) {
				blue = true
				break
			}
		}
		cols = append(cols, blue)
	}
	runs := 0
	for x := range cols {
		if cols[x] && (x == 0 || !cols[x-1]) {
			runs++
		}
	}
	// The bar is interrupted by the sending span (4 to 5), so the blue
	// columns are: bar, bar, legend swatch.
	if runs != 3 {
		t.Errorf("%d runs of compute-blue columns, want 3 (the bar on either side of the send, then the legend's swatch apart from it)", runs)
	}
}
