//go:build !purego

#include "textflag.h"

// ReLU6 and its gradient, 16 floats at a time, with one masked load and
// store for the n%16 tail (K1), as in vec_amd64.s.

// TAILMASK sets K1 to the low (reg & 15) bits; clobbers CX and BX.
#define TAILMASK(reg) \
	MOVQ reg, CX \
	ANDQ $15, CX \
	MOVL $1, BX \
	SHLL CX, BX \
	DECL BX \
	KMOVW BX, K1

// SIX broadcasts 6.0 (0x40c00000) into Z6; clobbers AX.
#define SIX \
	MOVL $0x40c00000, AX \
	VPBROADCASTD AX, Z6

// RELU6 sets Z2 from Z0: x where x > 0 or x is NaN (NLE_UQ), else +0; then
// 6 where x >= 6 (GE_OQ, false for NaN).
#define RELU6 \
	VCMPPS    $0x16, Z1, Z0, K2 \
	VMOVAPS.Z Z0, K2, Z2 \
	VCMPPS    $0x1d, Z6, Z0, K3 \
	VMOVAPS   Z6, K3, Z2

// func relu6AVX512(y, x *float32, n int)
TEXT ·relu6AVX512(SB), NOSPLIT, $0-24
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), DX
	TAILMASK(DX)
	VPXORD Z1, Z1, Z1
	SIX

full:
	CMPQ    DX, $16
	JB      tail
	VMOVUPS (SI), Z0
	RELU6
	VMOVUPS Z2, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, DX
	JMP     full

tail:
	TESTQ     DX, DX
	JZ        done
	VMOVUPS.Z (SI), K1, Z0
	RELU6
	VMOVUPS   Z2, K1, (DI)

done:
	VZEROUPPER
	RET

// func relu6BackwardAVX512(dx, dy, x *float32, n int)
// dx = dy where 0 < x (GT_OQ) and x < 6 (LT_OQ), +0 elsewhere.
TEXT ·relu6BackwardAVX512(SB), NOSPLIT, $0-32
	MOVQ   dx+0(FP), DI
	MOVQ   dy+8(FP), R8
	MOVQ   x+16(FP), SI
	MOVQ   n+24(FP), DX
	TAILMASK(DX)
	VPXORD Z1, Z1, Z1
	SIX

bfull:
	CMPQ      DX, $16
	JB        btail
	VMOVUPS   (SI), Z0
	VCMPPS    $0x1e, Z1, Z0, K2
	VCMPPS    $0x11, Z6, Z0, K2, K3
	VMOVUPS.Z (R8), K3, Z2
	VMOVUPS   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $64, R8
	ADDQ      $64, DI
	SUBQ      $16, DX
	JMP       bfull

btail:
	TESTQ     DX, DX
	JZ        bdone
	VMOVUPS.Z (SI), K1, Z0
	VCMPPS    $0x1e, Z1, Z0, K1, K2
	VCMPPS    $0x11, Z6, Z0, K2, K3
	VMOVUPS.Z (R8), K3, Z2
	VMOVUPS   Z2, K1, (DI)

bdone:
	VZEROUPPER
	RET
