package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An image folder whose train/ and test/ have different classes is refused,
// the difference named: label i would mean one class in training and
// another in testing.
func TestDataLabelsTrainTestDiffer(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"train/ant", "train/bee", "test/ant", "test/cat"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := DataLabels(dir)
	want := "test/ has other classes than train/: extra classes cat (not in train/); missing classes bee"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("DataLabels: %v; want an error saying %q", err, want)
	}
}
