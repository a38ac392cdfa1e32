package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/cmd/internal/experiment"
)

// TestAdaptModes runs the adaptation experiment at a tiny size, in
// process, and checks what each mode must do: (a) trains nothing, (b)
// leaves every weight but the last layer's bit-identical and moves the
// last layer, (c) and (d) move every layer; cooperative rows send bytes,
// lone ones none; the report files are written.
func TestAdaptModes(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"adapt", "--out", dir, "--tasks", "lenet", "--pretrain", "1500",
		"--pretrain-epochs", "2", "--train", "480", "--epochs", "1", "--test", "200", "--inproc", "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	rows := map[string]experiment.AdaptResult{}
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var r experiment.AdaptResult
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows[r.Mode+":"+r.Setting] = r
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8 (pretrain, a, b/c/d alone and coop)", len(rows))
	}
	const lastLayer = 84*10 + 10 // lenet5's fc3
	if r := rows["pretrain:alone"]; r.Accuracy < 0.5 {
		t.Errorf("pretraining on digits 0-4 reached only %.3f", r.Accuracy)
	}
	if r := rows["a:alone"]; r.Trainable != 0 || r.Bytes != 0 || r.Iterations != 0 || r.Accuracy > 0.05 {
		// The pretrained net never saw 5-9: it must be (almost) always wrong.
		t.Errorf("inference only: %+v", r)
	}
	for _, s := range []string{"alone", "coop"} {
		b := rows["b:"+s]
		if !b.FrozenIdentical || b.Trainable != lastLayer || b.Changed == 0 || b.Changed > lastLayer {
			t.Errorf("b %s: frozen identical %v, %d trainable, %d weights changed; want identical, %d, 1..%d",
				s, b.FrozenIdentical, b.Trainable, b.Changed, lastLayer, lastLayer)
		}
		for _, m := range []string{"c", "d"} {
			r := rows[m+":"+s]
			if r.Trainable != r.Params || r.Changed <= lastLayer || r.Iterations != 10 {
				t.Errorf("%s %s: %d of %d trainable, %d changed, %d iterations", m, s, r.Trainable, r.Params, r.Changed, r.Iterations)
			}
		}
		for _, m := range []string{"b", "c", "d"} {
			r := rows[m+":"+s]
			if (s == "coop") != (r.Bytes > 0) || r.PhoneSeconds <= 0 || len(r.Curve) == 0 {
				t.Errorf("%s %s: %d bytes, %.3f phone seconds, %d curve points", m, s, r.Bytes, r.PhoneSeconds, len(r.Curve))
			}
		}
	}
	if rows["c:alone"].Accuracy <= rows["a:alone"].Accuracy {
		t.Errorf("retraining (%.3f) did no better than inference only (%.3f)", rows["c:alone"].Accuracy, rows["a:alone"].Accuracy)
	}
	for _, f := range []string{"results.json", "table.md", "adapt-lenet.png", "pretrained-lenet.ctw"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestAdaptMobileNetCoop: fine-tuning the last layer of a batch-norm
// network on 3 simulated phones keeps the other weights bit-identical (the
// workers freeze what the hub froze) and evaluates with the merged
// batch-norm statistics.
func TestAdaptMobileNetCoop(t *testing.T) {
	dir := t.TempDir()
	c := experiment.AdaptConfig{Out: dir, Tasks: "mobilenet", Bandwidth: "32Mbit", Pretrain: 64, PretrainEpochs: 1,
		Train: 48, Epochs: 1, Test: 50, Seed: 1, InProc: true}
	if _, err := experiment.AdaptRow(context.Background(), c, "mobilenet:pretrain:alone"); err != nil {
		t.Fatal(err)
	}
	r, err := experiment.AdaptRow(context.Background(), c, "mobilenet:b:coop")
	if err != nil {
		t.Fatal(err)
	}
	if !r.FrozenIdentical || r.Changed == 0 || r.Trainable != 256*10+10 || r.Bytes == 0 {
		t.Fatalf("b coop: %+v", r)
	}
	if _, err := experiment.AdaptRow(context.Background(), c, "mobilenet:e:coop"); err == nil {
		t.Fatal("mode e accepted")
	}
}
