//go:build !purego

#include "textflag.h"

// NEON loops for arm64 over whole multiples of 4 floats (the filter
// gradient: of 16); the Go twins do the tail. The Go assembler has no
// vector FMUL, FADD, FMAX, FMIN or FCMGT, so they are WORDs with the
// instruction in a comment. Products and sums are separate instructions
// (FMUL then FADD, never FMLA), rounded as the Go twins round, so the bits
// are the twins' (TestConv3RowsAgainstTwin, TestReLU6AgainstTwin under
// qemu-aarch64). Go compiles the twins' min and max to FMINS and FMAXS,
// whose NaN and signed-zero rules the vector forms share.

// func relu6NEON(y, x *float32, n4 int)
// y = min(max(x, 0), 6).
TEXT ·relu6NEON(SB), NOSPLIT, $0-24
	MOVD y+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n4+16(FP), R2
	VEOR V1.B16, V1.B16, V1.B16
	MOVW $0x40c00000, R3
	VDUP R3, V6.S4

relu6:
	CBZ    R2, relu6done
	VLD1.P 16(R1), [V0.S4]
	WORD $0x4e21f400 // FMAX V0.S4, V0.S4, V1.S4
	WORD $0x4ea6f400 // FMIN V0.S4, V0.S4, V6.S4
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2
	B      relu6

relu6done:
	RET

// func relu6BackwardNEON(dx, dy, x *float32, n4 int)
// dx = dy where x > 0 and 6 > x (FCMGT: false for NaN), +0 elsewhere.
TEXT ·relu6BackwardNEON(SB), NOSPLIT, $0-32
	MOVD dx+0(FP), R0
	MOVD dy+8(FP), R4
	MOVD x+16(FP), R1
	MOVD n4+24(FP), R2
	VEOR V1.B16, V1.B16, V1.B16
	MOVW $0x40c00000, R3
	VDUP R3, V6.S4

back:
	CBZ    R2, backdone
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R4), [V4.S4]
	WORD $0x6ea1e402 // FCMGT V2.S4, V0.S4, V1.S4
	WORD $0x6ea0e4c3 // FCMGT V3.S4, V6.S4, V0.S4
	VAND   V2.B16, V3.B16, V2.B16
	VAND   V4.B16, V2.B16, V4.B16
	VST1.P [V4.S4], 16(R0)
	SUB    $4, R2
	B      back

backdone:
	RET
