//go:build !purego

#include "textflag.h"

// Batch normalisation's element loops: 16 floats at a time (8 for the
// float64 sums), the n%16 (n%8) tail through the mask K1. Every operation is
// rounded on its own (no fused multiply-add), in the Go twins' order.

// TAILMASK sets K1 to the low (reg & bits) bits; clobbers CX and BX.
#define TAILMASK(reg, bits) \
	MOVQ reg, CX \
	ANDQ $bits, CX \
	MOVL $1, BX \
	SHLL CX, BX \
	DECL BX \
	KMOVW BX, K1

// func bnApplyAVX512(y, x *float32, n int, mean, scale, shift float32)
// y = (x - mean)*scale + shift
TEXT ·bnApplyAVX512(SB), NOSPLIT, $0-36
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), DX
	VBROADCASTSS mean+24(FP), Z5
	VBROADCASTSS scale+28(FP), Z6
	VBROADCASTSS shift+32(FP), Z7
	TAILMASK(DX, 15)

afull:
	CMPQ    DX, $16
	JB      atail
	VMOVUPS (SI), Z0
	VSUBPS  Z5, Z0, Z0
	VMULPS  Z6, Z0, Z0
	VADDPS  Z7, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, DX
	JMP     afull

atail:
	TESTQ     DX, DX
	JZ        adone
	VMOVUPS.Z (SI), K1, Z0
	VSUBPS    Z5, Z0, Z0
	VMULPS    Z6, Z0, Z0
	VADDPS    Z7, Z0, Z0
	VMOVUPS   Z0, K1, (DI)

adone:
	VZEROUPPER
	RET

// BNDX sets Z0 = k*dy - b - a*(x - mean) from dy in Z0 and x in Z1.
#define BNDX \
	VMULPS Z4, Z0, Z0 \
	VSUBPS Z5, Z0, Z0 \
	VSUBPS Z7, Z1, Z1 \
	VMULPS Z6, Z1, Z1 \
	VSUBPS Z1, Z0, Z0

// func bnBackwardDataAVX512(dx, dy, x *float32, n int, k, b, a, mean float32)
TEXT ·bnBackwardDataAVX512(SB), NOSPLIT, $0-48
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), R8
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), DX
	VBROADCASTSS k+32(FP), Z4
	VBROADCASTSS b+36(FP), Z5
	VBROADCASTSS a+40(FP), Z6
	VBROADCASTSS mean+44(FP), Z7
	TAILMASK(DX, 15)

dfull:
	CMPQ    DX, $16
	JB      dtail
	VMOVUPS (R8), Z0
	VMOVUPS (SI), Z1
	BNDX
	VMOVUPS Z0, (DI)
	ADDQ    $64, R8
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, DX
	JMP     dfull

dtail:
	TESTQ     DX, DX
	JZ        ddone
	VMOVUPS.Z (R8), K1, Z0
	VMOVUPS.Z (SI), K1, Z1
	BNDX
	VMOVUPS   Z0, K1, (DI)

ddone:
	VZEROUPPER
	RET

// LANES8 leaves in X5's low half the sum of Z(acc)'s eight float64 lanes
// as ((0+4)+(2+6))+((1+5)+(3+7)); clobbers Y4, X6.
#define LANES8(acc, yacc) \
	VEXTRACTF64X4 $1, acc, Y4 \
	VADDPD        Y4, yacc, Y4 \
	VEXTRACTF128  $1, Y4, X5 \
	VADDPD        X5, X4, X5 \
	VPERMILPD     $1, X5, X6 \
	VADDSD        X6, X5, X5

// func sumDyDevAVX512(dy, x *float32, n int, mean float32) (sdy, sdyx float64)
// Lane j of Z2 (Σ dy) and Z3 (Σ dy*(x-mean)) takes the elements i%8 == j.
TEXT ·sumDyDevAVX512(SB), NOSPLIT, $0-48
	MOVQ         dy+0(FP), R8
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), DX
	VBROADCASTSS mean+24(FP), Z7
	TAILMASK(DX, 7)
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

sfull:
	CMPQ      DX, $8
	JB        stail
	VCVTPS2PD (R8), Z0
	VMOVUPS   (SI), Y1
	VSUBPS    Y7, Y1, Y1
	VCVTPS2PD Y1, Z1
	VADDPD    Z0, Z2, Z2
	VMULPD    Z1, Z0, Z1
	VADDPD    Z1, Z3, Z3
	ADDQ      $32, R8
	ADDQ      $32, SI
	SUBQ      $8, DX
	JMP       sfull

stail:
	TESTQ       DX, DX
	JZ          sdone
	VMOVUPS.Z   (R8), K1, Z0
	VMOVUPS.Z   (SI), K1, Z1
	VSUBPS      Z7, Z1, Z1
	VCVTPS2PD   Y0, Z0
	VCVTPS2PD   Y1, Z1
	VADDPD      Z0, Z2, Z2
	VMULPD.Z    Z1, Z0, K1, Z1
	VADDPD      Z1, Z3, Z3

sdone:
	LANES8(Z2, Y2)
	VMOVSD X5, sdy+32(FP)
	LANES8(Z3, Y3)
	VMOVSD X5, sdyx+40(FP)
	VZEROUPPER
	RET

// func sum64AVX512(s *float32, n int) float64
TEXT ·sum64AVX512(SB), NOSPLIT, $0-24
	MOVQ   s+0(FP), SI
	MOVQ   n+8(FP), DX
	TAILMASK(DX, 7)
	VPXORD Z2, Z2, Z2

ufull:
	CMPQ      DX, $8
	JB        utail
	VCVTPS2PD (SI), Z0
	VADDPD    Z0, Z2, Z2
	ADDQ      $32, SI
	SUBQ      $8, DX
	JMP       ufull

utail:
	TESTQ     DX, DX
	JZ        udone
	VMOVUPS.Z (SI), K1, Z0
	VCVTPS2PD Y0, Z0
	VADDPD    Z0, Z2, Z2

udone:
	LANES8(Z2, Y2)
	VMOVSD X5, ret+16(FP)
	VZEROUPPER
	RET

// func sqDev64AVX512(s *float32, n int, mean float64) float64
TEXT ·sqDev64AVX512(SB), NOSPLIT, $0-32
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), DX
	VBROADCASTSD mean+16(FP), Z7
	TAILMASK(DX, 7)
	VPXORD       Z2, Z2, Z2

qfull:
	CMPQ      DX, $8
	JB        qtail
	VCVTPS2PD (SI), Z0
	VSUBPD    Z7, Z0, Z0
	VMULPD    Z0, Z0, Z0
	VADDPD    Z0, Z2, Z2
	ADDQ      $32, SI
	SUBQ      $8, DX
	JMP       qfull

qtail:
	TESTQ     DX, DX
	JZ        qdone
	VMOVUPS.Z (SI), K1, Z0
	VCVTPS2PD Y0, Z0
	VSUBPD    Z7, Z0, Z0
	VMULPD.Z  Z0, Z0, K1, Z0
	VADDPD    Z0, Z2, Z2

qdone:
	LANES8(Z2, Y2)
	VMOVSD X5, ret+24(FP)
	VZEROUPPER
	RET
