package gpu

// PENDING: implemented by the convolution work (helper). Bodies panic until then.

// ConvWorkspace implements Backend.
func (*CPU) ConvWorkspace(g ConvGeom) int { panic("gpu: ConvWorkspace not implemented yet") }

// ConvForward implements Backend.
func (*CPU) ConvForward(g ConvGeom, y, x, w, bias, ws Buffer) {
	panic("gpu: ConvForward not implemented yet")
}

// ConvBackwardData implements Backend.
func (*CPU) ConvBackwardData(g ConvGeom, dx, dy, w, ws Buffer) {
	panic("gpu: ConvBackwardData not implemented yet")
}

// ConvBackwardFilter implements Backend.
func (*CPU) ConvBackwardFilter(g ConvGeom, dw, dbias, dy, x, ws Buffer) {
	panic("gpu: ConvBackwardFilter not implemented yet")
}
