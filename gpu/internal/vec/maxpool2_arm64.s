//go:build !purego

#include "textflag.h"

// 2x2 max pooling at stride 2 with NEON, one row pair, 4 windows at a time
// over n4 windows (the Go twin does the row's tail): VLD2 splits each row's
// eight floats into the windows' left and right columns, and FMAX takes
// the twin's max(max(r0 left, r0 right), max(r1 left, r1 right)), with Go's
// max rules (NaN wins, +0 beats -0). FMAX is a WORD: the Go assembler has
// no vector form.

// func maxPool2RowNEON(y, r0, r1 *float32, n4 int)
TEXT ·maxPool2RowNEON(SB), NOSPLIT, $0-32
	MOVD y+0(FP), R0
	MOVD r0+8(FP), R1
	MOVD r1+16(FP), R2
	MOVD n4+24(FP), R3

pool:
	CBZ    R3, pooldone
	VLD2.P 32(R1), [V0.S4, V1.S4]
	VLD2.P 32(R2), [V2.S4, V3.S4]
	WORD $0x4e21f404 // FMAX V4.S4, V0.S4, V1.S4
	WORD $0x4e23f445 // FMAX V5.S4, V2.S4, V3.S4
	WORD $0x4e25f484 // FMAX V4.S4, V4.S4, V5.S4
	VST1.P [V4.S4], 16(R0)
	SUB    $4, R3
	B      pool

pooldone:
	RET
