package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestTimelinePlot writes a PNG for valid spans and refuses spans outside
// the rows or kinds.
func TestTimelinePlot(t *testing.T) {
	dir := t.TempDir()
	rows := []string{"hub", "phone-a", "phone-b"}
	kinds := []Kind{{"compute", Compute}, {"send", Communication}}
	cases := []struct {
		name  string
		spans []Span
		ok    bool
	}{
		{"valid", []Span{{0, 0, 0, 1}, {1, 1, 0.5, 2}, {2, 0, 1, 3}, {2, 1, 3, 3}}, true},
		{"empty", nil, true},
		{"bad row", []Span{{3, 0, 0, 1}}, false},
		{"bad kind", []Span{{0, 2, 0, 1}}, false},
	}
	for _, tc := range cases {
		path := filepath.Join(dir, tc.name+".png")
		err := TimelinePlot(path, "t", "s", rows, kinds, "idle", tc.spans)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: err %v, want ok %v", tc.name, err, tc.ok)
		}
		if !tc.ok {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Fatalf("%s: %d bytes, err %v: not a PNG", tc.name, len(b), err)
		}
	}
}
