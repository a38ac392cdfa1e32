package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/libp2p/go-libp2p/core/peer"
)

// A hub checkpoint is an ordinary weight file (models.File) holding the
// master network's weights and state and the optimizer's state, with meta
// kind=hub-checkpoint, iteration (the trainer's Iter: the next iteration
// to open) and iterations (the run's planned length, which the cosine
// schedule depends on). models.SaveFile writes it atomically (temporary
// file, fsync, rename, fsync of the folder), so a hub killed at any moment
// leaves the previous checkpoint or the new one, never half of one.

const (
	checkpointName = "hub.ckpt"
	checkpointKind = "hub-checkpoint"
	identityName   = "hub.key"
)

// saveCheckpoint writes the trainer's state to dir/hub.ckpt.
//
// meta is the model's defining meta (hub.Model.Meta): a checkpoint of an
// imported model carries its graph, like any weight file of one.
func saveCheckpoint(dir, model string, cfg models.Config, meta [][2]string, tr *solver.Trainer, iterations uint64) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("hub: checkpoint: %w", err)
	}
	f := models.Snapshot(model, cfg, tr.Net, tr.Opt)
	f.Meta = [][2]string{
		{"kind", checkpointKind},
		{"iteration", strconv.Itoa(tr.Iter)},
		{"iterations", strconv.FormatUint(iterations, 10)},
	}
	f.Meta = append(f.Meta, meta...)
	path := filepath.Join(dir, checkpointName)
	if err := models.SaveFile(path, f); err != nil {
		return "", fmt.Errorf("hub: checkpoint: %w", err)
	}
	return path, nil
}

// loadCheckpoint restores dir/hub.ckpt into tr: weights, state, optimizer
// state and Iter. It refuses, naming the file, a checkpoint of another
// model or optimizer, a file that is not a hub checkpoint, and a corrupt
// or truncated one; on error tr is untouched. It returns the iteration
// and the run length the checkpoint was written for.
func loadCheckpoint(dir, model string, tr *solver.Trainer) (iter int, iterations uint64, err error) {
	path := filepath.Join(dir, checkpointName)
	f, err := models.LoadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("hub: --resume: %w", err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("hub: --resume: %s: "+format, append([]any{path}, args...)...)
	}
	if k := f.MetaValue("kind"); k != checkpointKind {
		return 0, 0, bad("not a hub checkpoint (kind %q)", k)
	}
	if err := f.Check(model); err != nil {
		return 0, 0, bad("%w", err)
	}
	iter, err = strconv.Atoi(f.MetaValue("iteration"))
	if err != nil || iter < 0 {
		return 0, 0, bad("iteration %q is not a count", f.MetaValue("iteration"))
	}
	iterations, err = strconv.ParseUint(f.MetaValue("iterations"), 10, 64)
	if err != nil {
		return 0, 0, bad("iterations %q is not a count", f.MetaValue("iterations"))
	}
	if f.Optimizer == "" {
		return 0, 0, bad("no optimizer state")
	}
	if err := f.Apply(tr.Net, tr.Opt); err != nil {
		return 0, 0, bad("%w", err)
	}
	tr.Iter = iter
	return iter, iterations, nil
}

// checkClasses refuses to resume from the checkpoint in dir when it was
// written for other classes than meta names (models.MetaLabels): the head's
// outputs would mean other classes. A checkpoint that names none (from
// before class names were stored) passes; a missing one is loadCheckpoint's
// to report.
func checkClasses(dir string, meta [][2]string) error {
	path := filepath.Join(dir, checkpointName)
	f, err := models.LoadFile(path)
	if err != nil {
		return nil
	}
	had, want := f.MetaValue(models.MetaLabels), models.MetaValue(meta, models.MetaLabels)
	if had == "" || had == want {
		return nil
	}
	return fmt.Errorf("hub: --resume: %s was written for the classes %s, the data has %s", path, had, want)
}

// loadAllow reads an allowlist: one libp2p peer id per line; blank lines
// and text after # are ignored. A line that is not a peer id is an error
// naming the file and line, so that a typo cannot lock a worker out
// silently.
func loadAllow(path string) (map[string]bool, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hub: --allow: %w", err)
	}
	defer fh.Close()
	allow := map[string]bool{}
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		id, err := peer.Decode(line)
		if err != nil {
			return nil, fmt.Errorf("hub: --allow: %s:%d: %q is not a peer id: %w", path, n, line, err)
		}
		allow[id.String()] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("hub: --allow: %s: %w", path, err)
	}
	return allow, nil
}
