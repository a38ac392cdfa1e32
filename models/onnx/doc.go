// Package onnx reads ONNX models into cotrain weight files and writes
// cotrain networks as ONNX models. It is the protobuf side only: the graph
// description an imported file carries, and building a network from it,
// belong to package models (models.Layer, models.File.Build), so every
// command that takes a weight file takes an imported one without importing
// this package.
//
// Caller's duties:
//  1. Import an ONNX file with ImportFile (it reads external data files,
//     such as model.onnx.data, from the model's folder only), or a stream
//     with Import (which refuses external data): the result is a models.File of the
//     model kind models.GraphModel whose layer list is kept in the file's
//     Meta (key models.MetaGraph) and whose parameters are the ONNX
//     initializers. Read File.Meta's MetaNote entries: they say what the
//     import changed (a final Softmax dropped, batch norm folded by the
//     exporter).
//  2. Build it like any weight file, with File.Build: it reconstructs the
//     network from the stored graph and loads the weights. Save it with
//     models.SaveFile.
//  3. Export any weight file, registered model or graph, with Export:
//     opset 14 (ExportOpset; 17 for a network with a layer norm, 20 with a
//     GELU, 21 with a group norm of fewer groups than channels), input
//     "input" (batch×C×H×W, dynamic batch; batch×C×L for a 1-D network,
//     written with 1-D operators: export_1d.go), output "output"
//     (batch×classes).
//
// 1-D models (N×C×L inputs: Conv1d, MaxPool1d, AvgPool1d, BatchNorm1d,
// AdaptiveAvgPool1d) import as the 2-D layers over N×C×1×L (ops_1d.go).
package onnx

import "errors"

// MetaNote is the File.Meta key of each note the import made (repeated).
const MetaNote = "onnx.note"

// Errors; the returned errors wrap these and say more. A bad graph
// description in a weight file is models.ErrGraph.
var (
	ErrMalformed   = errors.New("onnx: malformed model")
	ErrUnsupported = errors.New("onnx: unsupported")
	ErrMissing     = errors.New("onnx: missing tensor")
	ErrShape       = errors.New("onnx: shape mismatch")
)
