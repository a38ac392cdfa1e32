//go:build opencl

package opencl

import (
	"fmt"
	"strings"

	"github.com/cotrain/cotrain/gpu"
)

// actSource returns the OpenCL C of the kernels act_param and
// act_param_backward, generated from the operator table (gpu/ops.go): one
// switch case per entry, holding the entry's CLForward or CLBackward. It is
// appended to the main program's source, so the program cache (cache.go),
// which hashes the source, rebuilds when the table changes.
//
// act_param(kind, a, b, y, yoff, x, xoff, n) sets y = f(x) with kind a
// gpu.ActKind and a, b the Act's Alpha and Beta; act_param_backward(kind,
// a, b, dx, dxoff, dy, dyoff, t, toff, n) sets dx = dy·f'(t), t being x,
// or y where gpu.Act.FromOutput. Every kind of the table has a case,
// ReLU and ReLU6 included (Activate runs elementwise.cl's act for those;
// a test holds the two to the same bits). An unknown kind (which
// Act.Validate refuses before a launch) writes NaN.
func actSource() string {
	var b strings.Builder
	b.WriteString("// --- generated from gpu/ops.go by actgen.go\n")
	b.WriteString(`__kernel void act_param(int kind, float a, float b, __global store_t* y, int yoff, __global const store_t* x,
                        int xoff, int n) {
	int i = get_global_id(0);
	if (i >= n) return;
	float v = LD(x, xoff + i), r;
	switch (kind) {
`)
	for _, op := range gpu.UnaryOps() {
		fmt.Fprintf(&b, "\tcase %d: { // %s\n\t\t%s\n\t\tbreak;\n\t}\n", op.Kind, op.Name, op.CLForward)
	}
	b.WriteString(`	default:
		r = NAN;
	}
	ST(y, yoff + i, r);
}

__kernel void act_param_backward(int kind, float a, float b, __global store_t* dx, int dxoff,
                                 __global const store_t* dy, int dyoff, __global const store_t* t, int toff, int n) {
	int i = get_global_id(0);
	if (i >= n) return;
	float v = LD(t, toff + i), g = LD(dy, dyoff + i), r;
	switch (kind) {
`)
	for _, op := range gpu.UnaryOps() {
		fmt.Fprintf(&b, "\tcase %d: { // %s\n\t\t%s\n\t\tbreak;\n\t}\n", op.Kind, op.Name, op.CLBackward)
	}
	b.WriteString(`	default:
		r = NAN;
	}
	ST(dx, dxoff + i, r);
}
`)
	binarySource(&b)
	return b.String()
}

// binarySource writes the OpenCL C of the kernels broadcast and
// broadcast_partial, generated from the binary operator table
// (gpu/binops.go): one switch case per entry, holding its CLForward or its
// CLPartial for each operand. Both run on the 2-D range of runRows over
// the merged index space (tensor.cl's ROW and OFF).
//
// broadcast(op, dst, doff, a, aoff, b, boff, d0..d5, as0..as5, bs0..bs5)
// sets dst[row·d5 + i5] = f(a[aoff + OFF(as)], b[boff + OFF(bs)]) with op a
// gpu.BinOp; broadcast_partial(op, wrt, dst, doff, dy, dyoff, y, yoff, a,
// aoff, b, boff, ...) sets dst at the same place to operand wrt's share of
// dy there, y being the output (any buffer where the entry does not read
// it). An unknown operation writes NaN.
func binarySource(b *strings.Builder) {
	b.WriteString(`__kernel void broadcast(int op, __global store_t* dst, int doff, __global const store_t* a, int aoff,
                        __global const store_t* b, int boff, int d0, int d1, int d2, int d3, int d4, int d5, int as0,
                        int as1, int as2, int as3, int as4, int as5, int bs0, int bs1, int bs2, int bs3, int bs4,
                        int bs5) {
	int i5 = get_global_id(0), row = get_global_id(1);
	if (i5 >= d5) return;
	ROW(row, d)
	float x = LD(a, aoff + OFF(as)), y = LD(b, boff + OFF(bs)), r;
	switch (op) {
`)
	for _, e := range gpu.BinaryOps() {
		fmt.Fprintf(b, "\tcase %d: { // %s\n\t\t%s\n\t\tbreak;\n\t}\n", e.Op, e.ONNX, e.CLForward)
	}
	b.WriteString(`	default:
		r = NAN;
	}
	ST(dst, doff + row * d5 + i5, r);
}

__kernel void broadcast_partial(int op, int wrt, __global store_t* dst, int doff, __global const store_t* dy, int dyoff,
                                __global const store_t* yv, int yoff, __global const store_t* a, int aoff,
                                __global const store_t* b, int boff, int d0, int d1, int d2, int d3, int d4, int d5,
                                int as0, int as1, int as2, int as3, int as4, int as5, int bs0, int bs1, int bs2,
                                int bs3, int bs4, int bs5) {
	int i5 = get_global_id(0), row = get_global_id(1);
	if (i5 >= d5) return;
	ROW(row, d)
	int o = row * d5 + i5;
	float x = LD(a, aoff + OFF(as)), y = LD(b, boff + OFF(bs)), g = LD(dy, dyoff + o), d;
	float r = yoff >= 0 ? LD(yv, yoff + o) : 0;
	switch (op * 2 + wrt) {
`)
	for _, e := range gpu.BinaryOps() {
		for wrt, code := range e.CLPartial {
			fmt.Fprintf(b, "\tcase %d: { // %s, operand %d\n\t\t%s\n\t\tbreak;\n\t}\n", int(e.Op)*2+wrt, e.ONNX, wrt, code)
		}
	}
	b.WriteString(`	default:
		d = NAN;
	}
	ST(dst, doff + o, d);
}
`)
}
