package solver

// Refold folds the frozen prefix's batch norm now, if the folded weights
// are stale (fold.go): for BenchmarkRefold, which times the fold alone.
func (n *Net) Refold() { n.refold() }
