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
	return b.String()
}
