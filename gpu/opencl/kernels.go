//go:build opencl

package opencl

import "fmt"

// Typed kernel launches. Every kernel of the main program has a kernelID
// constant and a declaration (kernelDecls: its name in the .cl source and
// the kinds of its arguments), so a misspelt kernel does not compile, and
// the declarations are checked three ways:
//
//   - when the backend starts, each kernel's argument count against the
//     built program's (clGetKernelInfo CL_KERNEL_NUM_ARGS: clContext.kernel),
//     so a declaration that drifted from its source fails New, not a step;
//   - on every launch, the Go arguments against the declared kinds
//     (clContext.launch: a cheap comparison beside the type switch it
//     already makes), so a wrong argument is an error naming the kernel and
//     the argument, before anything is enqueued;
//   - without a device, TestKernelDecls parses the .cl sources (the
//     generated activation kernels and the FFT kernels included) and checks
//     every declaration's name and argument kinds against the source's
//     signature.
//
// The GEMM variants' kernels (gemm.go) and the FFT kernels (fft.go), built
// once per variant or size, are declared here too (gemmArgs, gemmSumArgs,
// fftDecls).

// kernelID names a kernel of the main program.
type kernelID uint8

// The main program's kernels, in kernelDecls' order.
const (
	kFill kernelID = iota
	kFromFloat
	kToFloat
	kAxpy
	kScale
	kMul
	kAddBias
	kBiasGrad
	kAct
	kActBackward
	kSoftmaxXent
	kSumPairs
	kSoftmaxXentBackward
	kSgdStep
	kAdamStep
	kIm2col
	kCol2im
	kDwForward
	kDwBackwardData
	kDwBackwardFilter
	kDwBackwardFilterPart
	kDwBackwardFilter3Part
	kDwBackwardFilterFinal
	kDwForward3S1
	kDwForward3S2
	kDwBackwardData3S1
	kDwBackwardData3S2
	kMaxpoolForward
	kMaxpoolForwardIdx
	kMaxpoolBackward
	kAvgpoolForward
	kAvgpoolBackward
	kBnStats
	kBnInferCoef
	kBnApply
	kBnBackwardReduce
	kBnBackwardDx
	kCopyStrided
	kBroadcast
	kBroadcastPartial
	kReduceSum
	kActParam
	kActParamBackward
	kSoftmaxAxis
	kSoftmaxAxisBackward
	kBnStatsPart
	kBnStatsFinal
	kBnBackwardPart
	kBnBackwardFinal
	kIm2colPlanes
	kIm2colWin
	kRowsPlain
	kCol2imPlanes
	kCol2imPlanesS1
	kBnApply4
	kBnBackwardDx4
	kAct4
	kActBackward4
	kTranspose
	kMaxpoolArgmax
	kMaxpoolBackwardIdx
	kMaxpoolArgmaxPlanes
	kMaxpoolBackwardIdxPlanes
	kMaxpoolBackwardIdxPlanesS2
	kWinoFilter
	kWinoInput
	kWinoOutput
	kDropoutMask
	kBiasAct
	kBiasActPlanes
	kActBiasGrad
	kBiasGradPart
	kActBiasGradPart
	kBiasGradCols
	kActBiasGradCols
	kLrnForward
	kLrnBackward
	kGatherRows
	kScatterAddRows
	kResample
	numKernels // one past the last kernel
)

// String returns the kernel's name in the source.
func (id kernelID) String() string { return kernelDecls[id].name }

// kernelDecl declares one kernel: its name in the source and the kind of
// each argument, one byte each: b a __global buffer (*clMem), i an int
// (Go int, passed as 32 bits), u a uint (uint32), f a float (float32), l a
// __local buffer (local).
type kernelDecl struct {
	name, args string
}

// kernelDecls are the main program's kernels, indexed by kernelID. Never
// written.
var kernelDecls = [numKernels]kernelDecl{
	kFill:                       {"fill", "biif"},
	kFromFloat:                  {"from_float", "bibi"},
	kToFloat:                    {"to_float", "bbii"},
	kAxpy:                       {"axpy", "fbibii"},
	kScale:                      {"scale", "biif"},
	kMul:                        {"mul", "bibibii"},
	kAddBias:                    {"add_bias", "bibiiii"},
	kBiasGrad:                   {"bias_grad", "bibiiii"},
	kAct:                        {"act", "ibibii"},
	kActBackward:                {"act_backward", "ibibibii"},
	kSoftmaxXent:                {"softmax_xent", "bibibbii"},
	kSumPairs:                   {"sum_pairs", "bibi"},
	kSoftmaxXentBackward:        {"softmax_xent_backward", "bibibiif"},
	kSgdStep:                    {"sgd_step", "bibibiifffi"},
	kAdamStep:                   {"adam_step", "bibibibiiffffff"},
	kIm2col:                     {"im2col", "bibiiiiiiiiiiiiii"},
	kCol2im:                     {"col2im", "bibiiiiiiiiiiiiii"},
	kDwForward:                  {"dw_forward", "bibibiiiiiiiiiiiiii"},
	kDwBackwardData:             {"dw_backward_data", "bibibiiiiiiiiiiiiii"},
	kDwBackwardFilter:           {"dw_backward_filter", "bibibiiiiiiiiiiiiii"},
	kDwBackwardFilterPart:       {"dw_backward_filter_part", "bbibiiiiiiiiiiiiiiii"},
	kDwBackwardFilter3Part:      {"dw_backward_filter3_part", "bbibiiiiiiiiiiiiiiii"},
	kDwBackwardFilterFinal:      {"dw_backward_filter_final", "bibii"},
	kDwForward3S1:               {"dw_forward3_s1", "bibibiiiiiiiiiiiiii"},
	kDwForward3S2:               {"dw_forward3_s2", "bibibiiiiiiiiiiiiii"},
	kDwBackwardData3S1:          {"dw_backward_data3_s1", "bibibiiiiiiiiiiiiii"},
	kDwBackwardData3S2:          {"dw_backward_data3_s2", "bibibiiiiiiiiiiiiii"},
	kMaxpoolForward:             {"maxpool_forward", "bibiiiiiiiiiiiiii"},
	kMaxpoolForwardIdx:          {"maxpool_forward_idx", "bibbiiiiiiiiiiiiii"},
	kMaxpoolBackward:            {"maxpool_backward", "bibibiiiiiiiiiiiiii"},
	kAvgpoolForward:             {"avgpool_forward", "bibiiiiiiiiiiiiiii"},
	kAvgpoolBackward:            {"avgpool_backward", "bibiiiiiiiiiiiiiii"},
	kBnStats:                    {"bn_stats", "bibibibibibibibiiiff"},
	kBnInferCoef:                {"bn_infer_coef", "bibibibibif"},
	kBnApply:                    {"bn_apply", "bibibiii"},
	kBnBackwardReduce:           {"bn_backward_reduce", "bibibibibibibibiiii"},
	kBnBackwardDx:               {"bn_backward_dx", "bibibibiii"},
	kCopyStrided:                {"copy_strided", "bibiiiiiiiiiiiiiiiiiiii"},
	kBroadcast:                  {"broadcast", "ibibibiiiiiiiiiiiiiiiiiii"},
	kBroadcastPartial:           {"broadcast_partial", "iibibibibibiiiiiiiiiiiiiiiiiii"},
	kReduceSum:                  {"reduce_sum", "bibifiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii"},
	kActParam:                   {"act_param", "iffbibii"},
	kActParamBackward:           {"act_param_backward", "iffbibibii"},
	kSoftmaxAxis:                {"softmax_axis", "bibiiii"},
	kSoftmaxAxisBackward:        {"softmax_axis_backward", "bibibiiii"},
	kBnStatsPart:                {"bn_stats_part", "bibiiiii"},
	kBnStatsFinal:               {"bn_stats_final", "bbibibibibibibiiiiiff"},
	kBnBackwardPart:             {"bn_backward_part", "bibibibiiiii"},
	kBnBackwardFinal:            {"bn_backward_final", "bbibibibibibiiiii"},
	kIm2colPlanes:               {"im2col_planes", "bibiiiiiiiiiiiiii"},
	kIm2colWin:                  {"im2col_win", "bibiiiiiiiiiiiiiii"},
	kRowsPlain:                  {"rows_plain", "bbiiii"},
	kCol2imPlanes:               {"col2im_planes", "bibiiiiiiiiiiiiii"},
	kCol2imPlanesS1:             {"col2im_planes_s1", "bibiiiiiiiiiiiiii"},
	kBnApply4:                   {"bn_apply4", "bibibiii"},
	kBnBackwardDx4:              {"bn_backward_dx4", "bibibibiii"},
	kAct4:                       {"act4", "ibibii"},
	kActBackward4:               {"act_backward4", "ibibibii"},
	kTranspose:                  {"transpose", "bibiii"},
	kMaxpoolArgmax:              {"maxpool_argmax", "bbiiiiiiiiiiiiii"},
	kMaxpoolBackwardIdx:         {"maxpool_backward_idx", "bibibiiiiiiiiiiiii"},
	kMaxpoolArgmaxPlanes:        {"maxpool_argmax_planes", "bbiiiiiiiiiiiiii"},
	kMaxpoolBackwardIdxPlanes:   {"maxpool_backward_idx_planes", "bibibiiiiiiiiiiiii"},
	kMaxpoolBackwardIdxPlanesS2: {"maxpool_backward_idx_planes_s2", "bibibiiiiiiiiiiiii"},
	kWinoFilter:                 {"wino_filter", "bbiiiii"},
	kWinoInput:                  {"wino_input", "bibiiiiiiiiiiii"},
	kWinoOutput:                 {"wino_output", "biibibiiiiiiiiii"},
	kDropoutMask:                {"dropout_mask", "biiuuuf"},
	kBiasAct:                    {"bias_act", "ibibiiiii"},
	kBiasActPlanes:              {"bias_act_planes", "ibibiiii"},
	kActBiasGrad:                {"act_bias_grad", "ibibibibiiii"},
	kBiasGradPart:               {"bias_grad_part", "bbiiiiii"},
	kActBiasGradPart:            {"act_bias_grad_part", "ibibbibiiiiii"},
	kBiasGradCols:               {"bias_grad_cols", "bibiiii"},
	kActBiasGradCols:            {"act_bias_grad_cols", "ibibibibiiii"},
	kLrnForward:                 {"lrn_forward", "bibiiiiiifff"},
	kLrnBackward:                {"lrn_backward", "bibibibiiiiiifff"},
	kGatherRows:                 {"gather_rows", "bibibiii"},
	kScatterAddRows:             {"scatter_add_rows", "bibibiii"},
	kResample:                   {"resample", "bibibbbiiii"},
}

// The arguments of every GEMM kernel (gemm.cl's GEMM_ARGS) and of gemm_sum.
const (
	gemmArgs    = "iiifbiiiiibiiiiifbiiiiiiibiibi"
	gemmSumArgs = "iiifbfbiiiiiiibi"
)

// fftKernel names one of fft.cl's kernels, built once per size in fftSizes.
type fftKernel uint8

// fft.cl's kernels, in fftDecls' order.
const (
	fftR2C fftKernel = iota
	fftR2CThin
	fftC2R
	fftC2RThin
	numFFTKernels
)

// fftDecls are fft.cl's kernels (the name before the size's suffix, "_16").
var fftDecls = [numFFTKernels]kernelDecl{
	fftR2C:     {"fft_r2c", "bibiiiiiiiiiiiiiiii"},
	fftR2CThin: {"fft_r2c_thin", "bibiiiiiiiiiiiiiiii"},
	fftC2R:     {"fft_c2r", "bibiiiiiiiiiiiibiii"},
	fftC2RThin: {"fft_c2r_thin", "bibiiiiiiiiiiiibiii"},
}

// fftKernelIndex is the index in OpenCL.k of FFT kernel f of size p (after the
// main program's kernels), or -1 for a size fft.cl is not built for.
func fftKernelIndex(f fftKernel, p int) int {
	for i, s := range fftSizes {
		if s == p {
			return int(numKernels) + int(f)*len(fftSizes) + i
		}
	}
	return -1
}

// argKind is the kind byte of a launch argument, or 0 for a type no kernel
// takes.
func argKind(a any) byte {
	switch a.(type) {
	case *clMem:
		return 'b'
	case int:
		return 'i'
	case uint32:
		return 'u'
	case float32:
		return 'f'
	case local:
		return 'l'
	}
	return 0
}

// checkArgs reports a launch whose arguments differ from the declaration
// args in number or kind.
func checkArgs(name, args string, given []any) error {
	if len(given) != len(args) {
		return fmt.Errorf("gpu: opencl: kernel %s takes %d arguments (%s), given %d", name, len(args), args, len(given))
	}
	for i, a := range given {
		if k := argKind(a); k != args[i] {
			return fmt.Errorf("gpu: opencl: kernel %s argument %d is a %T, declared %q", name, i, a, args[i])
		}
	}
	return nil
}
