package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// SaveFinal writes a cooperative run's final weights to dir/weights.ctw and
// returns the path and the file's SHA-256. The hub and every worker write
// the same bytes for the same weights: the file holds the model, the meta
// that defines it (meta: models.DefiningMeta, as the Welcome carried it:
// an imported model's graph, class names, input normalisation), its
// weights and state and the iteration count, and nothing node-specific (no
// optimizer state, no seed or shard).
func SaveFinal(dir, model string, cfg models.Config, meta [][2]string, net *solver.Net, iterations int) (path, sum string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	f := models.Snapshot(model, cfg, net, nil)
	f.Meta = append([][2]string{{"iterations", strconv.Itoa(iterations)}}, models.DefiningMeta(meta)...)
	path = filepath.Join(dir, "weights.ctw")
	if err := models.SaveFile(path, f); err != nil {
		return "", "", err
	}
	sum, err = FileSHA256(path)
	return path, sum, err
}

// FileSHA256 returns the hex SHA-256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("cli: hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
