package gpu

// PENDING: implemented by the pooling work (helper). Bodies panic until then.

// MaxPoolForward implements Backend.
func (*CPU) MaxPoolForward(g PoolGeom, y, x Buffer) { panic("gpu: MaxPoolForward not implemented yet") }

// MaxPoolBackward implements Backend.
func (*CPU) MaxPoolBackward(g PoolGeom, dx, dy, x Buffer) {
	panic("gpu: MaxPoolBackward not implemented yet")
}

// AvgPoolForward implements Backend.
func (*CPU) AvgPoolForward(g PoolGeom, y, x Buffer) { panic("gpu: AvgPoolForward not implemented yet") }

// AvgPoolBackward implements Backend.
func (*CPU) AvgPoolBackward(g PoolGeom, dx, dy Buffer) {
	panic("gpu: AvgPoolBackward not implemented yet")
}
