//go:build !purego

#include "textflag.h"

// The Winograd transforms' loops with NEON, 4 floats at a time over n4 (a
// multiple of 4; the Go twin does the tail), each sum and difference its
// own FADD or FSUB in the twins' order. The Go assembler has no vector
// floating-point arithmetic, so it is WORDs with the instruction in a
// comment.

// func winoInNEON(a0, a1, a2, a3, d0, d1, d2, d3 *float32, n4 int)
// a0 = d0 - d2, a1 = d1 + d2, a2 = d2 - d1, a3 = d1 - d3.
TEXT ·winoInNEON(SB), NOSPLIT, $0-72
	MOVD a0+0(FP), R0
	MOVD a1+8(FP), R1
	MOVD a2+16(FP), R2
	MOVD a3+24(FP), R3
	MOVD d0+32(FP), R4
	MOVD d1+40(FP), R5
	MOVD d2+48(FP), R6
	MOVD d3+56(FP), R7
	MOVD n4+64(FP), R8

in:
	CBZ    R8, indone
	VLD1.P 16(R4), [V0.S4]
	VLD1.P 16(R5), [V1.S4]
	VLD1.P 16(R6), [V2.S4]
	VLD1.P 16(R7), [V3.S4]
	WORD $0x4ea2d404 // FSUB V4.S4, V0.S4, V2.S4
	WORD $0x4e22d425 // FADD V5.S4, V1.S4, V2.S4
	WORD $0x4ea1d446 // FSUB V6.S4, V2.S4, V1.S4
	WORD $0x4ea3d427 // FSUB V7.S4, V1.S4, V3.S4
	VST1.P [V4.S4], 16(R0)
	VST1.P [V5.S4], 16(R1)
	VST1.P [V6.S4], 16(R2)
	VST1.P [V7.S4], 16(R3)
	SUB    $4, R8
	B      in

indone:
	RET

// func winoOutNEON(s0, s1, m0, m1, m2, m3 *float32, n4 int)
// s0 = (m0 + m1) + m2, s1 = (m1 - m2) - m3.
TEXT ·winoOutNEON(SB), NOSPLIT, $0-56
	MOVD s0+0(FP), R0
	MOVD s1+8(FP), R1
	MOVD m0+16(FP), R4
	MOVD m1+24(FP), R5
	MOVD m2+32(FP), R6
	MOVD m3+40(FP), R7
	MOVD n4+48(FP), R8

out:
	CBZ    R8, outdone
	VLD1.P 16(R4), [V0.S4]
	VLD1.P 16(R5), [V1.S4]
	VLD1.P 16(R6), [V2.S4]
	VLD1.P 16(R7), [V3.S4]
	WORD $0x4e21d404 // FADD V4.S4, V0.S4, V1.S4
	WORD $0x4e22d484 // FADD V4.S4, V4.S4, V2.S4
	WORD $0x4ea2d425 // FSUB V5.S4, V1.S4, V2.S4
	WORD $0x4ea3d4a5 // FSUB V5.S4, V5.S4, V3.S4
	VST1.P [V4.S4], 16(R0)
	VST1.P [V5.S4], 16(R1)
	SUB    $4, R8
	B      out

outdone:
	RET

// func winoDyNEON(o0, o1, o2, o3, p, q *float32, n4 int)
// o0 = p, o1 = p + q, o2 = p - q, o3 = -q (FNEG: the sign bit flipped).
TEXT ·winoDyNEON(SB), NOSPLIT, $0-56
	MOVD o0+0(FP), R0
	MOVD o1+8(FP), R1
	MOVD o2+16(FP), R2
	MOVD o3+24(FP), R3
	MOVD p+32(FP), R4
	MOVD q+40(FP), R5
	MOVD n4+48(FP), R8

dy:
	CBZ    R8, dydone
	VLD1.P 16(R4), [V0.S4]
	VLD1.P 16(R5), [V1.S4]
	WORD $0x4e21d402 // FADD V2.S4, V0.S4, V1.S4
	WORD $0x4ea1d403 // FSUB V3.S4, V0.S4, V1.S4
	WORD $0x6ea0f824 // FNEG V4.S4, V1.S4
	VST1.P [V0.S4], 16(R0)
	VST1.P [V2.S4], 16(R1)
	VST1.P [V3.S4], 16(R2)
	VST1.P [V4.S4], 16(R3)
	SUB    $4, R8
	B      dy

dydone:
	RET
