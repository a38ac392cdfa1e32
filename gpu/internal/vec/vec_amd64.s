//go:build !purego

#include "textflag.h"

// The loops run 16 floats at a time and finish with one masked load and
// store; K1 holds the mask of the n%16 tail. Masked-off lanes are neither
// read (no fault past the slice) nor written.

// TAILMASK sets K1 to the low (reg & 15) bits; clobbers CX and BX.
#define TAILMASK(reg) \
	MOVQ reg, CX \
	ANDQ $15, CX \
	MOVL $1, BX \
	SHLL CX, BX \
	DECL BX \
	KMOVW BX, K1

// func copyRowsAVX512(dst *float32, ldd int, src *float32, lds int, rows, n int)
TEXT ·copyRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ n+40(FP), DX
	TAILMASK(DX)
	MOVQ rows+32(FP), CX

crow:
	MOVQ DX, R10
	MOVQ DI, R11
	MOVQ SI, R12
	CMPQ R10, $16
	JB   ctail

cfull:
	VMOVUPS (R12), Z0
	VMOVUPS Z0, (R11)
	ADDQ    $64, R11
	ADDQ    $64, R12
	SUBQ    $16, R10
	CMPQ    R10, $16
	JAE     cfull

ctail:
	TESTQ     R10, R10
	JZ        cnext
	VMOVUPS.Z (R12), K1, Z0
	VMOVUPS   Z0, K1, (R11)

cnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  crow
	VZEROUPPER
	RET

// func addRowsAVX512(dst *float32, ldd int, src *float32, lds int, rows, n int)
TEXT ·addRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ n+40(FP), DX
	TAILMASK(DX)
	MOVQ rows+32(FP), CX

arow:
	MOVQ DX, R10
	MOVQ DI, R11
	MOVQ SI, R12
	CMPQ R10, $16
	JB   atail

afull:
	VMOVUPS (R12), Z0
	VADDPS  (R11), Z0, Z0
	VMOVUPS Z0, (R11)
	ADDQ    $64, R11
	ADDQ    $64, R12
	SUBQ    $16, R10
	CMPQ    R10, $16
	JAE     afull

atail:
	TESTQ     R10, R10
	JZ        anext
	VMOVUPS.Z (R12), K1, Z0
	VMOVUPS.Z (R11), K1, Z1
	VADDPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (R11)

anext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  arow
	VZEROUPPER
	RET

// func addShiftedAVX512(dst, src *float32, lds, taps, n int)
// dst[s+j] += src[s*lds+j] for s < taps, j < n, with n+taps-1 <= 16: dst
// stays in Z0; tap s is loaded into lanes s..s+n-1 (mask K2, shifted left
// once per tap) from src + s*lds - s floats, so that lane j reads src[s*lds+j-s].
TEXT ·addShiftedAVX512(SB), NOSPLIT, $0-40
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $2, R9
	SUBQ $4, R9
	MOVQ taps+24(FP), R10
	MOVQ n+32(FP), DX
	MOVQ DX, CX
	MOVL $1, BX
	SHLL CX, BX
	DECL BX
	KMOVW BX, K2
	LEAQ -1(DX)(R10*1), CX
	MOVL $1, BX
	SHLL CX, BX
	DECL BX
	KMOVW BX, K1
	MOVQ dst+0(FP), DI
	VMOVUPS.Z (DI), K1, Z0

htap:
	VMOVUPS.Z (SI), K2, Z1
	VADDPS    Z1, Z0, Z0
	KSHIFTLW  $1, K2, K2
	ADDQ      R9, SI
	DECQ      R10
	JNZ       htap
	VMOVUPS   Z0, K1, (DI)
	VZEROUPPER
	RET

// func reluAVX512(y, x *float32, n int)
// y = x where !(x <= 0) (x > 0 or NaN), +0 elsewhere: predicate NLE_UQ.
TEXT ·reluAVX512(SB), NOSPLIT, $0-24
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), DX
	TAILMASK(DX)
	VPXORD Z1, Z1, Z1

rfull:
	CMPQ      DX, $16
	JB        rtail
	VMOVUPS   (SI), Z0
	VCMPPS    $0x16, Z1, Z0, K2
	VMOVAPS.Z Z0, K2, Z2
	VMOVUPS   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $16, DX
	JMP       rfull

rtail:
	TESTQ     DX, DX
	JZ        rdone
	VMOVUPS.Z (SI), K1, Z0
	VCMPPS    $0x16, Z1, Z0, K2
	VMOVAPS.Z Z0, K2, Z2
	VMOVUPS   Z2, K1, (DI)

rdone:
	VZEROUPPER
	RET

// func reluBackwardAVX512(dx, dy, x *float32, n int)
// dx = dy where x > 0 (ordered: GT_OQ), +0 elsewhere.
TEXT ·reluBackwardAVX512(SB), NOSPLIT, $0-32
	MOVQ   dx+0(FP), DI
	MOVQ   dy+8(FP), R8
	MOVQ   x+16(FP), SI
	MOVQ   n+24(FP), DX
	TAILMASK(DX)
	VPXORD Z1, Z1, Z1

bfull:
	CMPQ      DX, $16
	JB        btail
	VMOVUPS   (SI), Z0
	VCMPPS    $0x1e, Z1, Z0, K2
	VMOVUPS.Z (R8), K2, Z2
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
	VCMPPS    $0x1e, Z1, Z0, K2
	KANDW     K1, K2, K2
	VMOVUPS.Z (R8), K2, Z2
	VMOVUPS   Z2, K1, (DI)

bdone:
	VZEROUPPER
	RET

// func addScalarAVX512(x *float32, n int, v float32)
TEXT ·addScalarAVX512(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), DX
	TAILMASK(DX)
	VBROADCASTSS v+16(FP), Z1

sfull:
	CMPQ    DX, $16
	JB      stail
	VADDPS  (DI), Z1, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	SUBQ    $16, DX
	JMP     sfull

stail:
	TESTQ     DX, DX
	JZ        sdone
	VMOVUPS.Z (DI), K1, Z0
	VADDPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (DI)

sdone:
	VZEROUPPER
	RET
