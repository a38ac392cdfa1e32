package main

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// allBinaries are the commands a user builds.
var allBinaries = []string{"cotrain", "hub", "worker", "sim"}

// built holds the four binaries, built once for this package's tests.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// buildAll builds the four commands as a user would (go build -o DIR) and
// returns the folder they are in.
func buildAll(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "cotrain-worker-bins"); built.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", built.dir)
		for _, b := range allBinaries {
			build.Args = append(build.Args, "github.com/cotrain/cotrain/cmd/"+b)
		}
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// Every binary's --help, and every cotrain command's, starts with a usage
// line and then a sentence on what it does, and exits 0.
func TestHelpOfEveryBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four binaries")
	}
	dir := buildAll(t)
	cases := [][]string{{"hub"}, {"worker"}, {"sim"}, {"cotrain"}}
	for _, sub := range []string{"train", "finetune", "eval", "predict", "import", "export", "adapt", "profile", "models", "keygen"} {
		cases = append(cases, []string{"cotrain", sub})
	}
	for _, c := range cases {
		cmd := exec.Command(filepath.Join(dir, c[0]), append(c[1:], "--help")...)
		out, err := cmd.CombinedOutput()
		name := strings.Join(c, " ")
		if err != nil {
			t.Errorf("%s --help: %v\n%s", name, err, out)
			continue
		}
		lines := strings.Split(string(out), "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "Usage: "+name) || lines[1] != "" ||
			!strings.HasSuffix(strings.TrimSpace(lines[2]), ".") || strings.HasPrefix(lines[2], "-") {
			t.Errorf("%s --help starts\n%s\nwant \"Usage: %s ...\", a blank line, then a sentence", name, strings.Join(lines[:min(4, len(lines))], "\n"), name)
		}
	}
}

// A worker reads and decodes its whole data set before it dials any hub:
// a truncated photo stops it, exit 1, with the file named, and no
// connection is ever attempted (the --hub address here is unreachable and
// never dialled: the error is the data's).
func TestWorkerRefusesABrokenPhotoBeforeJoining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four binaries")
	}
	dir := buildAll(t)
	data := t.TempDir()
	for _, c := range []string{"cat", "dog"} {
		if err := os.MkdirAll(filepath.Join(data, c), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			var buf bytes.Buffer
			if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 8, 8))); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			if c == "dog" && i == 2 {
				b = b[:len(b)/2]
			}
			if err := os.WriteFile(filepath.Join(data, c, fmt.Sprintf("%d.png", i)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command(filepath.Join(dir, "worker"), "--data", data,
		"--hub", "/ip4/127.0.0.1/tcp/9/p2p/12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA", "--reconnect-timeout", "0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("worker with a broken photo: %v\n%s", err, stderr.String())
	}
	bad := filepath.Join(data, "dog", "2.png")
	if msg := stderr.String(); !strings.Contains(msg, bad) || !strings.Contains(msg, "fix or remove the file") ||
		!strings.Contains(msg, "not joining") || strings.Contains(msg, "dial") {
		t.Errorf("worker stderr:\n%s\nwant %s named, \"fix or remove the file\", \"not joining\", and no dial", msg, bad)
	}
}

// Two workers on one host, given no --name, show as two devices.
func TestDefaultNameDiffersByShard(t *testing.T) {
	var stderr bytes.Buffer
	a, err := parseFlags([]string{"--shard", "0/2"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseFlags([]string{"--shard", "1/2"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if a.name == b.name || a.name != host+"-0" || b.name != host+"-1" {
		t.Errorf("default names %q and %q; want %s-0 and %s-1", a.name, b.name, host, host)
	}
	c, err := parseFlags([]string{"--shard", "1/2", "--name", "phone"}, &stderr)
	if err != nil || c.name != "phone" {
		t.Errorf("--name phone: %q, %v", c.name, err)
	}
}
