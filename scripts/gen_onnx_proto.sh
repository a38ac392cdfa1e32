#!/bin/sh
# Regenerates models/onnx/onnxpb/onnx.pb.go from the onnx.proto that Debian's
# python3-onnx ships (ONNX 1.12, IR version 8). Run from the repository root.
#
# Needs protoc (Debian's protobuf-compiler) and protoc-gen-go at the version
# of google.golang.org/protobuf in go.mod:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
set -eu
proto=${ONNX_PROTO:-$(dpkg -L python3-onnx | grep '/onnx/onnx.proto$')}
out=models/onnx/onnxpb
mkdir -p "$out"
# Keep a copy of the source next to the generated code, so a reader can see
# exactly which schema the Go types come from.
cp "$proto" "$out/onnx.proto"
PATH="$(go env GOPATH)/bin:$PATH" protoc \
	--proto_path="$out" \
	--go_out="$out" --go_opt=paths=source_relative \
	--go_opt=Monnx.proto=github.com/cotrain/cotrain/models/onnx/onnxpb \
	onnx.proto
