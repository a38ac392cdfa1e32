package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/cotrain/cotrain/data"
)

// Data is what a simulation trains and evaluates on. Data sets are
// read-only and safe for concurrent Get, so runs that go on at the same
// time share one.
type Data struct {
	// Train is the whole training set; co-training runs shard it by device.
	Train data.Dataset
	// Test is the evaluation subset (Scenario.TestImages images spread
	// evenly over the test set).
	Test data.Dataset
}

// LoadData loads the scenario's data: real MNIST (found as data.FindMNIST
// says with getenv, os.Getenv in cmd/sim), or a small seeded synthetic set
// of MNIST's shape.
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
	return &Data{Train: train, Test: test}, nil
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
