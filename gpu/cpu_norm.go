package gpu

// PENDING: implemented by the batch-norm work (helper). Bodies panic until then.

// BatchNormTrain implements Backend.
func (*CPU) BatchNormTrain(g BNGeom, y, x, gamma, beta, runMean, runVar, saveMean, saveInvStd Buffer) {
	panic("gpu: BatchNormTrain not implemented yet")
}

// BatchNormInfer implements Backend.
func (*CPU) BatchNormInfer(g BNGeom, y, x, gamma, beta, runMean, runVar Buffer) {
	panic("gpu: BatchNormInfer not implemented yet")
}

// BatchNormBackward implements Backend.
func (*CPU) BatchNormBackward(g BNGeom, dx, dgamma, dbeta, dy, x, gamma, saveMean, saveInvStd Buffer) {
	panic("gpu: BatchNormBackward not implemented yet")
}
