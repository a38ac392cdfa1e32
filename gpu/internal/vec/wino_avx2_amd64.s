//go:build !purego

#include "textflag.h"

// The Winograd transforms' loops with AVX2, 8 floats at a time over n8 (a
// multiple of 8; the Go twin does the tail), each sum and difference its
// own VADDPS or VSUBPS in the twins' order.

// func winoInAVX2(a0, a1, a2, a3, d0, d1, d2, d3 *float32, n8 int)
// a0 = d0 - d2, a1 = d1 + d2, a2 = d2 - d1, a3 = d1 - d3.
TEXT ·winoInAVX2(SB), NOSPLIT, $0-72
	MOVQ a0+0(FP), DI
	MOVQ a1+8(FP), SI
	MOVQ a2+16(FP), R8
	MOVQ a3+24(FP), R9
	MOVQ d0+32(FP), R10
	MOVQ d1+40(FP), R11
	MOVQ d2+48(FP), R12
	MOVQ d3+56(FP), R13
	MOVQ n8+64(FP), DX
	XORQ AX, AX

in:
	CMPQ    DX, $8
	JB      indone
	VMOVUPS (R10)(AX*4), Y0
	VMOVUPS (R11)(AX*4), Y1
	VMOVUPS (R12)(AX*4), Y2
	VMOVUPS (R13)(AX*4), Y3
	VSUBPS  Y2, Y0, Y4
	VADDPS  Y2, Y1, Y5
	VSUBPS  Y1, Y2, Y6
	VSUBPS  Y3, Y1, Y7
	VMOVUPS Y4, (DI)(AX*4)
	VMOVUPS Y5, (SI)(AX*4)
	VMOVUPS Y6, (R8)(AX*4)
	VMOVUPS Y7, (R9)(AX*4)
	ADDQ    $8, AX
	SUBQ    $8, DX
	JMP     in

indone:
	VZEROUPPER
	RET

// func winoOutAVX2(s0, s1, m0, m1, m2, m3 *float32, n8 int)
// s0 = (m0 + m1) + m2, s1 = (m1 - m2) - m3.
TEXT ·winoOutAVX2(SB), NOSPLIT, $0-56
	MOVQ s0+0(FP), DI
	MOVQ s1+8(FP), SI
	MOVQ m0+16(FP), R10
	MOVQ m1+24(FP), R11
	MOVQ m2+32(FP), R12
	MOVQ m3+40(FP), R13
	MOVQ n8+48(FP), DX
	XORQ AX, AX

out:
	CMPQ    DX, $8
	JB      outdone
	VMOVUPS (R10)(AX*4), Y0
	VMOVUPS (R11)(AX*4), Y1
	VMOVUPS (R12)(AX*4), Y2
	VMOVUPS (R13)(AX*4), Y3
	VADDPS  Y1, Y0, Y4
	VADDPS  Y2, Y4, Y4
	VSUBPS  Y2, Y1, Y5
	VSUBPS  Y3, Y5, Y5
	VMOVUPS Y4, (DI)(AX*4)
	VMOVUPS Y5, (SI)(AX*4)
	ADDQ    $8, AX
	SUBQ    $8, DX
	JMP     out

outdone:
	VZEROUPPER
	RET

// func winoDyAVX2(o0, o1, o2, o3, p, q *float32, n8 int)
// o0 = p, o1 = p + q, o2 = p - q, o3 = -q (the sign bit flipped).
TEXT ·winoDyAVX2(SB), NOSPLIT, $0-56
	MOVQ         o0+0(FP), DI
	MOVQ         o1+8(FP), SI
	MOVQ         o2+16(FP), R8
	MOVQ         o3+24(FP), R9
	MOVQ         p+32(FP), R10
	MOVQ         q+40(FP), R11
	MOVQ         n8+48(FP), DX
	MOVL         $0x80000000, AX
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	XORQ         AX, AX

dy:
	CMPQ    DX, $8
	JB      dydone
	VMOVUPS (R10)(AX*4), Y0
	VMOVUPS (R11)(AX*4), Y1
	VADDPS  Y1, Y0, Y2
	VSUBPS  Y1, Y0, Y3
	VXORPS  Y7, Y1, Y4
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y2, (SI)(AX*4)
	VMOVUPS Y3, (R8)(AX*4)
	VMOVUPS Y4, (R9)(AX*4)
	ADDQ    $8, AX
	SUBQ    $8, DX
	JMP     dy

dydone:
	VZEROUPPER
	RET
