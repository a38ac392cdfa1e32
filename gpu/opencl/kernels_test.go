//go:build opencl

package opencl

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// clSignatures returns the argument kinds (kernelDecl.args) of every
// kernel in OpenCL C source src, by name. It expands what the sources
// use to declare kernels: function-like macros whose body declares
// kernels (conv.cl's DW3_KERNELS, COL2IM_PLANES), invoked at the start of
// a line; gemm.cl's GEMM_ARGS; fft.cl's FFT_K(name), which is name_P for
// the FFT_P defined last before it.
func clSignatures(t *testing.T, src string) map[string]string {
	t.Helper()
	define := regexp.MustCompile(`(?m)^#define (\w+)\(([^)]*)\)((?:.*\\\n)*.*)$`)
	for _, m := range define.FindAllStringSubmatch(src, -1) {
		name, body := m[1], strings.ReplaceAll(m[3], "\\\n", "\n")
		if !strings.Contains(body, "__kernel") {
			continue
		}
		params := strings.Split(m[2], ",")
		src = strings.Replace(src, m[0], "", 1)
		call := regexp.MustCompile(`(?m)^` + name + `\(([^)]*)\)`)
		src = call.ReplaceAllStringFunc(src, func(inv string) string {
			args := strings.Split(call.FindStringSubmatch(inv)[1], ",")
			b := body
			for i, p := range params {
				b = regexp.MustCompile(`\b`+strings.TrimSpace(p)+`\b`).ReplaceAllLiteralString(b, strings.TrimSpace(args[i]))
			}
			return regexp.MustCompile(`\s*##\s*`).ReplaceAllString(b, "")
		})
	}
	if m := regexp.MustCompile(`#define GEMM_ARGS((?:.*\\\n)*.*)`).FindStringSubmatch(src); m != nil {
		src = strings.ReplaceAll(src, "(GEMM_ARGS)", "("+strings.ReplaceAll(m[1], "\\\n", " ")+")")
	}
	out := map[string]string{}
	kernel := regexp.MustCompile(`#define FFT_P (\d+)|__kernel\s+(?:\w+\s+)?void\s+(?:FFT_K\((\w+)\)|(\w+))\s*\(([^)]*)\)`)
	p := ""
	for _, m := range kernel.FindAllStringSubmatch(src, -1) {
		if m[1] != "" {
			p = m[1]
			continue
		}
		name := m[3]
		if m[2] != "" {
			name = m[2] + "_" + p
		}
		var kinds strings.Builder
		for _, a := range strings.Split(m[4], ",") {
			a = strings.Join(strings.Fields(a), " ")
			switch {
			case strings.Contains(a, "__global"):
				kinds.WriteByte('b')
			case strings.Contains(a, "__local"):
				kinds.WriteByte('l')
			case strings.HasPrefix(a, "int "):
				kinds.WriteByte('i')
			case strings.HasPrefix(a, "uint "):
				kinds.WriteByte('u')
			case strings.HasPrefix(a, "float "):
				kinds.WriteByte('f')
			default:
				t.Fatalf("kernel %s: argument %q of a type no launch passes", name, a)
			}
		}
		if _, dup := out[name]; dup {
			t.Fatalf("kernel %s declared twice", name)
		}
		out[name] = kinds.String()
	}
	return out
}

// TestKernelDecls checks, without a device, every kernel declaration
// (kernels.go) against the signature in the .cl sources: the main
// program's kernels (the generated activation kernels included), the FFT
// kernels at every size and the GEMM kernels; and that the main program
// has no kernel without a declaration.
func TestKernelDecls(t *testing.T) {
	sigs := clSignatures(t, mainSource(gpu.DeviceInfo{LocalMem: 48 << 10}))
	declared := map[string]bool{}
	check := func(name, args string) {
		t.Helper()
		declared[name] = true
		if got, ok := sigs[name]; !ok {
			t.Errorf("kernel %s is declared, not in the source", name)
		} else if got != args {
			t.Errorf("kernel %s: declared %q, the source's arguments are %q", name, args, got)
		}
	}
	for _, d := range kernelDecls {
		check(d.name, d.args)
	}
	for _, d := range fftDecls {
		for _, p := range fftSizes {
			check(fmt.Sprintf("%s_%d", d.name, p), d.args)
		}
	}
	for name := range sigs {
		if !declared[name] {
			t.Errorf("kernel %s of the main program has no declaration", name)
		}
	}
	if len(sigs) < 80 {
		t.Errorf("only %d kernels parsed", len(sigs))
	}
	gemm := clSignatures(t, kernelSource("gemm.cl"))
	for _, name := range gemmKernels {
		if gemm[name] != gemmArgs {
			t.Errorf("kernel %s: declared %q, the source's arguments are %q", name, gemmArgs, gemm[name])
		}
	}
	if gemm["gemm_sum"] != gemmSumArgs {
		t.Errorf("kernel gemm_sum: declared %q, the source's arguments are %q", gemmSumArgs, gemm["gemm_sum"])
	}
	// The parser itself: a changed signature is seen.
	if s := clSignatures(t, "__kernel void k(__global float* x, int n, float a) {}")["k"]; s != "bif" {
		t.Errorf("parsed %q", s)
	}
}

// TestLaunchChecksArgs checks that a launch whose arguments differ from the
// kernel's declaration in number or kind is an error naming the kernel and
// enqueues nothing, and that a declaration whose argument count differs
// from the program's fails when the kernel is created.
func TestLaunchChecksArgs(t *testing.T) {
	o := openCLForTest(t)
	x := o.buf(o.Alloc(8))
	k := o.kernel(kFill)
	before := o.ctx.launches
	for _, args := range [][]any{
		{x.m, 0, 8},                      // one missing
		{x.m, 0, 8, float32(1), 3},       // one extra
		{x.m, 0, 8, 1},                   // an int for a float
		{x.m, float32(0), 8, float32(1)}, // a float for an int
		{0, 0, 8, float32(1)},            // an int for a buffer
	} {
		err := o.ctx.launch(k, []int{8}, nil, args...)
		if err == nil || !strings.Contains(err.Error(), "kernel fill") {
			t.Errorf("%T...: error %v, want one naming kernel fill", args, err)
		}
	}
	if o.ctx.launches != before {
		t.Errorf("%d launches enqueued", o.ctx.launches-before)
	}
	p, err := o.ctx.buildSource("__kernel void twice(__global float* x, float add) { x[0] *= add; }", "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.release()
	if _, err := o.ctx.kernel(p, "twice", "bfi"); err == nil || !strings.Contains(err.Error(), "2 arguments in the program, 3 in its declaration") {
		t.Errorf("a declaration of 3 arguments for a kernel of 2: error %v", err)
	}
}
