package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// outFlag matches the definition of an --out flag with its default:
// fs.StringVar(&c.out, "out", "cotrain-out", …) or flags.String("out", "swarm.key", …).
var outFlag = regexp.MustCompile(`(?:StringVar\([^,]+,|String\()\s*"out",\s*"([^"]+)"`)

// TestDefaultOutputsIgnored finds every --out default of the commands and
// checks that the repository's .gitignore ignores it at the root, where a
// command run from a checkout writes it.
func TestDefaultOutputsIgnored(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	raw, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	ignored := strings.Fields(string(raw))
	files, err := filepath.Glob(filepath.Join(root, "cmd", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range outFlag.FindAllStringSubmatch(string(src), -1) {
			found = append(found, m[1])
			if !slices.Contains(ignored, "/"+m[1]+"/") && !slices.Contains(ignored, "/"+m[1]) {
				t.Errorf("%s: the default --out %q is not in .gitignore (as /%s/ or /%s)", f, m[1], m[1], m[1])
			}
		}
	}
	// The five commands that write folders by default, and keygen's key.
	for _, want := range []string{"cotrain-out", "cotrain-hub", "cotrain-worker", "cotrain-report", "swarm.key"} {
		if !slices.Contains(found, want) {
			t.Errorf("found the defaults %q but not %q: is the pattern still right?", found, want)
		}
	}
}
