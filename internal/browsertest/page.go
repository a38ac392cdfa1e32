package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// DocsImgEnv, set to 1, makes the browser tests also write their
// screenshots into docs/img (the pictures docs/dashboard.md shows):
//
//	COTRAIN_DOCS_IMG=1 go test ./cmd/hub ./cmd/sim -run InChromium -count=1
//
// A plain go test leaves the tree alone.
const DocsImgEnv = "COTRAIN_DOCS_IMG"

// Screenshot keeps png as the test artifact name and, with DocsImgEnv set
// to 1, in docs/img as well. It fails t when png is not a PNG. The test
// must run in a package two folders below the repository root (cmd/hub,
// cmd/sim), as go test runs it from its package's folder.
func Screenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("%s: not a PNG (%d bytes)", name, len(png))
	}
	dirs := []string{t.ArtifactDir()}
	if os.Getenv(DocsImgEnv) == "1" {
		dirs = append(dirs, filepath.Join("..", "..", "docs", "img"))
	}
	for _, d := range dirs {
		path := filepath.Join(d, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", path, len(png))
	}
}

// CheckLayout fails t where the page in tab cuts what it shows: a session
// value (".kv b") wider than its box (the iteration count once read
// "18460 / 10…"), a chart's iteration labels outside its canvas (the
// canvases' data-xlabels: lowest x, highest x, width), the page wider
// than the window. where names the page and width in the message.
func CheckLayout(t *testing.T, tab context.Context, where string) {
	t.Helper()
	type layout struct {
		Cut      []string
		Labels   []string
		Overflow int
	}
	got, err := chromedp.Run(tab, chromedp.Evaluate[layout](`(() => ({
		Cut: [...document.querySelectorAll(".kv b")].filter((b) => b.scrollWidth > b.clientWidth + 1).map((b) => b.id + "=" + b.textContent),
		Labels: [...document.querySelectorAll("canvas[data-xlabels]")].filter((c) => {
			const [lo, hi, w] = c.dataset.xlabels.split(",").map(Number);
			return lo < 0 || hi > w;
		}).map((c) => c.id + " " + c.dataset.xlabels),
		Overflow: document.documentElement.scrollWidth - window.innerWidth}))()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cut) > 0 || len(got.Labels) > 0 || got.Overflow > 0 {
		t.Errorf("%s: values cut %q, labels outside their canvas %q, page %d px wider than the window", where, got.Cut, got.Labels, got.Overflow)
	}
}
