package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The embedded files are the ones on disk, and each is a GNU licence.
func TestLicenses(t *testing.T) {
	for part, n := range map[string]int{"train": 6, "heldout": 2} {
		names, texts, err := Licenses(part)
		if err != nil || len(names) != n {
			t.Fatalf("%s: %d files, %v", part, len(names), err)
		}
		for i, name := range names {
			disk, err := os.ReadFile(filepath.Join("licenses", part, name))
			if err != nil || string(disk) != texts[i] {
				t.Errorf("%s/%s differs from the file on disk (%v)", part, name, err)
			}
			if !strings.Contains(texts[i], "GNU") || !strings.Contains(texts[i], "verbatim copies") {
				t.Errorf("%s/%s is not a GNU licence text", part, name)
			}
		}
	}
	if _, _, err := Licenses("other"); err == nil {
		t.Error("part other: no error")
	}
}
