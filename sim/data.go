package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/internal/corpus"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// Data is what a simulation trains and evaluates on. Data sets are
// read-only and safe for concurrent Get, so runs that go on at the same
// time share one.
type Data struct {
	// Train is the whole training set; co-training runs shard it by device.
	Train data.Dataset
	// Config sizes the model to the data where the data decides it (text:
	// the vocabulary is the classes, the context the input); zero for
	// images, whose model keeps its defaults.
	Config models.Config
	// Test is the evaluation subset (Scenario.TestImages images spread
	// evenly over the test set).
	Test data.Dataset
}

// LoadData loads the scenario's data: real MNIST (found as data.FindMNIST
// says with getenv, os.Getenv in cmd/sim), the licence texts, simulated
// accelerometer recordings (accel), or a small seeded synthetic set of
// MNIST's shape.
func LoadData(sc *Scenario, getenv func(string) string) (*Data, error) {
	var train, test data.Dataset
	switch sc.Data {
	case "mnist":
		tr, err := data.LoadMNIST("train", getenv)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		te, err := data.LoadMNIST("test", getenv)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		train, test = tr, te
	case "licenses":
		tr, te, err := licenses(sc)
		if err != nil {
			return nil, err
		}
		train, test = tr, te
	case "accel":
		tr, te, err := accel(sc.Seed)
		if err != nil {
			return nil, err
		}
		train, test = tr, te
	case "synthetic":
		tr, err := synthetic(6000, sc.Seed)
		if err != nil {
			return nil, err
		}
		te, err := synthetic(1000, sc.Seed+1)
		if err != nil {
			return nil, err
		}
		train, test = tr, te
	default:
		return nil, fmt.Errorf("%w: data %q", ErrScenario, sc.Data)
	}
	if n := sc.TrainImages; n > 0 && n < train.Len() {
		train = data.Subset(train, seq(n, 1))
	}
	if n := sc.TestImages; n < test.Len() {
		test = data.Subset(test, seq(n, test.Len()/n))
	}
	d := &Data{Train: train, Test: test}
	if t, ok := train.(*data.Text); ok { // never subset: Validate refuses train= for text
		_, _, w := t.Shape()
		d.Config = models.Config{Classes: t.Classes(), Input: solver.Shape{C: 1, H: 1, W: w}}
	}
	if s, ok := train.(*data.Signals); ok { // never subset either: Validate refuses train= for accel
		c, h, w := s.Shape()
		d.Config = models.Config{Classes: s.Classes(), Input: solver.Shape{C: c, H: h, W: w}}
	}
	return d, nil
}

// licenses loads internal/corpus's licence texts: the training ones, with
// the vocabulary built from them, and the held-out ones through it.
func licenses(sc *Scenario) (train, test *data.Text, err error) {
	names, texts, err := corpus.Licenses("train")
	if err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	if train, err = data.NewText(names, texts, data.TextOptions{Context: sc.Context}); err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	if names, texts, err = corpus.Licenses("heldout"); err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	if test, err = data.NewText(names, texts, data.TextOptions{Context: sc.Context, Vocab: train.Vocab()}); err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	return train, test, nil
}

// accel returns simulated accelerometer windows (data.AccelSignals, the
// recordings scripts/gen_accel.go writes): 12 recordings of 30 s per
// activity drawn from seed to train on, and 4 of another seed, which no
// phone holds, to evaluate on, normalised with the training windows'
// statistics; windows of 128 steps every 64 (data's defaults).
func accel(seed uint64) (train, test *data.Signals, err error) {
	if train, err = data.AccelSignals(data.AccelOptions{Recordings: 12, Seconds: 30, Seed: seed}, data.SensorOptions{}); err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	mean, std := train.Norm()
	test, err = data.AccelSignals(data.AccelOptions{Recordings: 4, Seconds: 30, Seed: seed + 1000}, data.SensorOptions{Mean: mean, Std: std})
	if err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	return train, test, nil
}

// seq returns 0, step, 2·step, ... (n values).
func seq(n, step int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i * step
	}
	return out
}

// synthetic returns n images of data.Synthetic, seeded: for tests of the
// machinery, not for figures.
func synthetic(n int, seed uint64) (data.Dataset, error) {
	ds, err := data.Synthetic(n, rand.New(rand.NewPCG(seed, 77)))
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return ds, nil
}

// shard is phone i's share of n of the training data: a part of every
// document of text (its owner's own writing, data.Text.Part), every n-th
// sample of anything else (data.Shard).
func shard(ds data.Dataset, i, n int) (data.Dataset, error) {
	if t, ok := ds.(*data.Text); ok {
		return t.Part(i, n)
	}
	return data.Shard(ds, i, n)
}
