package gpu

// RowGatherer is implemented by backends with kernels for an embedding's
// lookup (OpenCL: two launches a pass where row-by-row copies took one per
// token). The ids are float32 values of whole numbers, in a Buffer of the
// backend (the network's input as it was uploaded).
//
// Caller's duties (solver.Embedding keeps to them):
//  1. Check every id on the host first: a whole number in [0, rows of the
//     table). The kernels index with the ids as given.
//  2. GatherRows(dst, table, ids, dim) sets row i of dst (dim elements) to
//     row ids[i] of table, for every i < ids.Len(); dst holds
//     ids.Len()·dim elements.
//  3. ScatterAddRows(table, src, ids, dim) adds row i of src into row
//     ids[i] of table, for every i in order, so that rows of a repeated id
//     sum in the same order on every backend and every run.
type RowGatherer interface {
	GatherRows(dst, table, ids Buffer, dim int)
	ScatterAddRows(table, src, ids Buffer, dim int)
}
