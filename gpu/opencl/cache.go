//go:build opencl

package opencl

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/cotrain/cotrain/gpu"
)

// Program building and the on-disk binary cache.
//
// A program is identified by the device name, driver version, device version,
// build options and full source text; its binary (CL_PROGRAM_BINARIES) is
// saved as <dir>/<sha256 of those>.bin. The next process on the same device
// and driver loads it with clCreateProgramWithBinary, skipping the compiler
// (seconds on phones). A binary the driver refuses (CL_INVALID_BINARY after a
// driver update that kept its version string, a truncated file) falls back to
// building the source, and the fresh binary replaces the file. Writes go
// through a temporary file and a rename, so a concurrent reader never sees
// half a binary.

//go:embed kernels/*.cl
var kernelFS embed.FS

// kernelSource concatenates the embedded files, common.cl first.
func kernelSource(files ...string) string {
	var b strings.Builder
	for _, f := range append([]string{"common.cl"}, files...) {
		src, err := kernelFS.ReadFile("kernels/" + f)
		if err != nil {
			panic("gpu: opencl: missing embedded kernel " + f) // a build without the file: our bug
		}
		fmt.Fprintf(&b, "// --- %s\n%s\n", f, src)
	}
	return b.String()
}

// DefaultCacheDir is os.UserCacheDir()/cotrain/opencl, or "" (no disk
// cache) when the platform has none: DefaultConfig's CacheDir.
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "cotrain", "opencl")
}

// deviceKey identifies what a compiled binary depends on besides its source.
func deviceKey(d gpu.DeviceInfo) string {
	return d.Name + "\x00" + d.Driver + "\x00" + d.Version + "\x00" + d.Platform
}

func hashKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// buildCached returns src built with opts, from dir's binary when the driver
// accepts it. fromDisk reports which path was taken (for logs and tests).
func (c *clContext) buildCached(info gpu.DeviceInfo, dir, src, opts string, log *slog.Logger) (p *clProgram, fromDisk bool, err error) {
	path := ""
	if dir != "" {
		path = filepath.Join(dir, hashKey(deviceKey(info), opts, src)+".bin")
		if bin, rerr := os.ReadFile(path); rerr == nil {
			p, berr := c.buildBinary(bin, opts)
			if berr == nil {
				return p, true, nil
			}
			log.Debug("gpu: opencl: cached binary refused, building source", "file", path, "err", berr)
		}
	}
	p, err = c.buildSource(src, opts)
	if err != nil {
		return nil, false, err
	}
	if path != "" {
		if err := saveBinary(p, path); err != nil {
			log.Debug("gpu: opencl: program binary not cached", "file", path, "err", err)
		}
	}
	return p, false, nil
}

func saveBinary(p *clProgram, path string) error {
	bin, err := p.binary()
	if err != nil {
		return err
	}
	if len(bin) == 0 {
		return errors.New("driver returned an empty binary")
	}
	return writeAtomic(path, bin)
}

// writeAtomic writes data to path through a temporary file in the same folder.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(f.Name())
		return errors.Join(werr, cerr)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
