// Package browsertest opens pages in headless Chromium for the tests of
// the pages cotrain serves or writes (the hub's and worker's dashboard,
// the simulator's report). Only tests import it.
package browsertest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Chromium returns the path of a Chromium on PATH, or skips t, saying that
// what (such as "the dashboard's browser test") needs it. Call it before
// any costly set-up.
func Chromium(t testing.TB, what string) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skipf("no chromium on PATH: %s needs it (Debian: apt-get install chromium; scripts/test.sh installs it)", what)
	return ""
}

// Tab starts the headless Chromium at path under ctx, in a window of
// 1280x1000 with a fresh profile and no background traffic, and returns
// the context of one tab for chromedp.Run; the browser is closed when t
// ends. Chromium's log goes to t.Logf.
func Tab(t testing.TB, ctx context.Context, path string) context.Context {
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000))
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelTab)
	return tab
}
