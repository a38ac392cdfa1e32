//go:build !purego

#include "textflag.h"

// ReLU and its gradient with AVX2, 8 floats at a time over n8 (a multiple of
// 8; the Go twin does the tail): the twins' masks as lane compares.

// func reluAVX2(y, x *float32, n8 int)
// y = x where x > 0 or x is NaN (NLE_UQ against +0), else +0.
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n8+16(FP), DX
	VXORPS Y1, Y1, Y1

relu:
	CMPQ    DX, $8
	JB      reludone
	VMOVUPS (SI), Y0
	VCMPPS  $0x16, Y1, Y0, Y2
	VANDPS  Y0, Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, DX
	JMP     relu

reludone:
	VZEROUPPER
	RET

// func reluBackwardAVX2(dx, dy, x *float32, n8 int)
// dx = dy where x > 0 (GT_OQ: false for NaN), +0 elsewhere.
TEXT ·reluBackwardAVX2(SB), NOSPLIT, $0-32
	MOVQ   dx+0(FP), DI
	MOVQ   dy+8(FP), R8
	MOVQ   x+16(FP), SI
	MOVQ   n8+24(FP), DX
	VXORPS Y1, Y1, Y1

back:
	CMPQ    DX, $8
	JB      backdone
	VMOVUPS (SI), Y0
	VCMPPS  $0x1e, Y1, Y0, Y2
	VANDPS  (R8), Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, DI
	SUBQ    $8, DX
	JMP     back

backdone:
	VZEROUPPER
	RET
