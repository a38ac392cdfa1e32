//go:build !purego

#include "textflag.h"

// ReLU6 and its gradient with AVX2, 8 floats at a time over n8 (a multiple
// of 8; the Go twin does the tail), the comparisons of relu6_amd64.s as
// lane masks.

// SIX8 broadcasts 6.0 (0x40c00000) into Y6 and clears Y1; clobbers AX.
#define SIX8 \
	MOVL         $0x40c00000, AX \
	MOVL         AX, X6 \
	VBROADCASTSS X6, Y6 \
	VXORPS       Y1, Y1, Y1

// func relu6AVX2(y, x *float32, n8 int)
// y = x where x > 0 or x is NaN (NLE_UQ), else +0 (the AND with the mask);
// then 6 where x >= 6 (GE_OQ, false for NaN).
TEXT ·relu6AVX2(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n8+16(FP), DX
	SIX8

relu6:
	CMPQ      DX, $8
	JB        relu6done
	VMOVUPS   (SI), Y0
	VCMPPS    $0x16, Y1, Y0, Y2
	VANDPS    Y0, Y2, Y2
	VCMPPS    $0x1d, Y6, Y0, Y3
	VBLENDVPS Y3, Y6, Y2, Y2
	VMOVUPS   Y2, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, DX
	JMP       relu6

relu6done:
	VZEROUPPER
	RET

// func relu6BackwardAVX2(dx, dy, x *float32, n8 int)
// dx = dy where 0 < x (GT_OQ) and x < 6 (LT_OQ), +0 elsewhere.
TEXT ·relu6BackwardAVX2(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ n8+24(FP), DX
	SIX8

back:
	CMPQ    DX, $8
	JB      backdone
	VMOVUPS (SI), Y0
	VCMPPS  $0x1e, Y1, Y0, Y2
	VCMPPS  $0x11, Y6, Y0, Y3
	VANDPS  Y3, Y2, Y2
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
