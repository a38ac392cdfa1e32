package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestFinetuneCachePrefix: cotrain finetune of an imported ResNet (its
// last layer learning) over three epochs of an image folder ends with the
// same weight file, bit for bit, with the prefix cache (the default) as
// with --cache-prefix 0; with the cache, the first epoch keeps every
// training sample's features and the later two serve every sample from
// it; without, nothing is kept. A size the flag cannot read is refused.
func TestFinetuneCachePrefix(t *testing.T) {
	dir := t.TempDir()
	colourFolder(t, filepath.Join(dir, "fruit"), fruit, 12)
	args := []string{"finetune", "--weights", "../../models/onnx/testdata/resnet_small_op13.onnx", "--data", filepath.Join(dir, "fruit"),
		"--train-last", "1", "--epochs", "3", "--batch", "8", "--json", "--device", "cpu", "--checkpoint-every", "0"}
	plain, plainOut := cotrain(t, append(args, "--out", filepath.Join(dir, "plain"), "--cache-prefix", "0")...)
	cached, cachedOut := cotrain(t, append(args, "--out", filepath.Join(dir, "cached"))...)
	if plain["weights_sha256"] == nil || cached["weights_sha256"] != plain["weights_sha256"] {
		t.Errorf("weights with the prefix cache %v, without %v", cached["weights_sha256"], plain["weights_sha256"])
	}
	epochs := func(out string) []map[string]any {
		var es []map[string]any
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var obj map[string]any
			if json.Unmarshal(sc.Bytes(), &obj) == nil && obj["event"] == "epoch" {
				es = append(es, obj)
			}
		}
		return es
	}
	es := epochs(cachedOut)
	if len(es) != 3 {
		t.Fatalf("%d epoch events, want 3:\n%s", len(es), cachedOut)
	}
	for i, e := range es {
		t.Logf("epoch %v: %.1f samples/s, %v cached, %v served from the cache", e["epoch"], e["samples_per_sec"], e["cached_samples"], e["cache_hits"])
		n, _ := e["cached_samples"].(float64)
		hits, _ := e["cache_hits"].(float64)
		if n == 0 || hits != float64(i)*n {
			t.Errorf("epoch %d: %v samples cached, %v served; want all cached after the first and all served after", i+1, e["cached_samples"], e["cache_hits"])
		}
	}
	for _, e := range epochs(plainOut) {
		if e["cached_samples"] != 0.0 || e["cache_hits"] != 0.0 {
			t.Errorf("--cache-prefix 0: %v", e)
		}
	}
	if err, _ := runErr(append(args, "--out", filepath.Join(dir, "bad"), "--cache-prefix", "lots")...); err == nil || !strings.Contains(err.Error(), "--cache-prefix") {
		t.Errorf("--cache-prefix lots: %v, want a refusal naming the flag", err)
	}
}
