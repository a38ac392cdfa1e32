//go:build !purego

#include "textflag.h"

// The 3x3 depthwise rows with NEON, 4 outputs at a time over n4 (a
// multiple of 4; the Go twin does the tail), and the filter gradient's 16
// lanes 16 elements at a time over n16: each tap multiplied (FMUL) and then
// added (FADD) in the twin's order, never fused, so the bits are the
// twin's. Weights w[0..8] are broadcast into V16..V24; the Go assembler has
// no vector FMUL or FADD, so they are WORDs with the instruction in a
// comment.

// func conv3RowsNEON(out, x0, x1, x2, w *float32, n4 int)
TEXT ·conv3RowsNEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD x0+8(FP), R1
	MOVD x1+16(FP), R2
	MOVD x2+24(FP), R3
	MOVD w+32(FP), R4
	MOVD n4+40(FP), R5
	VLD1R (R4), [V16.S4]
	ADD   $4, R4
	VLD1R (R4), [V17.S4]
	ADD   $4, R4
	VLD1R (R4), [V18.S4]
	ADD   $4, R4
	VLD1R (R4), [V19.S4]
	ADD   $4, R4
	VLD1R (R4), [V20.S4]
	ADD   $4, R4
	VLD1R (R4), [V21.S4]
	ADD   $4, R4
	VLD1R (R4), [V22.S4]
	ADD   $4, R4
	VLD1R (R4), [V23.S4]
	ADD   $4, R4
	VLD1R (R4), [V24.S4]
	ADD   $4, R4

loopconv3RowsNEON:
	CBZ R5, doneconv3RowsNEON
	VEOR V0.B16, V0.B16, V0.B16
	ADD   $4, R1, R6
	ADD   $8, R1, R7
	VLD1  (R1), [V10.S4]
	VLD1  (R6), [V11.S4]
	VLD1  (R7), [V12.S4]
	WORD $0x6e30dd41 // FMUL V1.S4, V10.S4, V16.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e31dd61 // FMUL V1.S4, V11.S4, V17.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e32dd81 // FMUL V1.S4, V12.S4, V18.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	ADD   $4, R2, R6
	ADD   $8, R2, R7
	VLD1  (R2), [V10.S4]
	VLD1  (R6), [V11.S4]
	VLD1  (R7), [V12.S4]
	WORD $0x6e33dd41 // FMUL V1.S4, V10.S4, V19.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e34dd61 // FMUL V1.S4, V11.S4, V20.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e35dd81 // FMUL V1.S4, V12.S4, V21.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	ADD   $4, R3, R6
	ADD   $8, R3, R7
	VLD1  (R3), [V10.S4]
	VLD1  (R6), [V11.S4]
	VLD1  (R7), [V12.S4]
	WORD $0x6e36dd41 // FMUL V1.S4, V10.S4, V22.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e37dd61 // FMUL V1.S4, V11.S4, V23.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e38dd81 // FMUL V1.S4, V12.S4, V24.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	VST1.P [V0.S4], 16(R0)
	ADD    $16, R1
	ADD    $16, R2
	ADD    $16, R3
	SUB    $4, R5
	B      loopconv3RowsNEON

doneconv3RowsNEON:
	RET

// func conv3RowsFlippedNEON(out, x0, x1, x2, w *float32, n4 int)
TEXT ·conv3RowsFlippedNEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R0
	MOVD x0+8(FP), R1
	MOVD x1+16(FP), R2
	MOVD x2+24(FP), R3
	MOVD w+32(FP), R4
	MOVD n4+40(FP), R5
	VLD1R (R4), [V16.S4]
	ADD   $4, R4
	VLD1R (R4), [V17.S4]
	ADD   $4, R4
	VLD1R (R4), [V18.S4]
	ADD   $4, R4
	VLD1R (R4), [V19.S4]
	ADD   $4, R4
	VLD1R (R4), [V20.S4]
	ADD   $4, R4
	VLD1R (R4), [V21.S4]
	ADD   $4, R4
	VLD1R (R4), [V22.S4]
	ADD   $4, R4
	VLD1R (R4), [V23.S4]
	ADD   $4, R4
	VLD1R (R4), [V24.S4]
	ADD   $4, R4

loopconv3RowsFlippedNEON:
	CBZ R5, doneconv3RowsFlippedNEON
	VEOR V0.B16, V0.B16, V0.B16
	ADD   $4, R1, R6
	ADD   $8, R1, R7
	VLD1  (R1), [V10.S4]
	VLD1  (R6), [V11.S4]
	VLD1  (R7), [V12.S4]
	WORD $0x6e30dd81 // FMUL V1.S4, V12.S4, V16.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e31dd61 // FMUL V1.S4, V11.S4, V17.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e32dd41 // FMUL V1.S4, V10.S4, V18.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	ADD   $4, R2, R6
	ADD   $8, R2, R7
	VLD1  (R2), [V10.S4]
	VLD1  (R6), [V11.S4]
	VLD1  (R7), [V12.S4]
	WORD $0x6e33dd81 // FMUL V1.S4, V12.S4, V19.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e34dd61 // FMUL V1.S4, V11.S4, V20.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e35dd41 // FMUL V1.S4, V10.S4, V21.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	ADD   $4, R3, R6
	ADD   $8, R3, R7
	VLD1  (R3), [V10.S4]
	VLD1  (R6), [V11.S4]
	VLD1  (R7), [V12.S4]
	WORD $0x6e36dd81 // FMUL V1.S4, V12.S4, V22.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e37dd61 // FMUL V1.S4, V11.S4, V23.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	WORD $0x6e38dd41 // FMUL V1.S4, V10.S4, V24.S4
	WORD $0x4e21d400 // FADD V0.S4, V0.S4, V1.S4
	VST1.P [V0.S4], 16(R0)
	ADD    $16, R1
	ADD    $16, R2
	ADD    $16, R3
	SUB    $4, R5
	B      loopconv3RowsFlippedNEON

doneconv3RowsFlippedNEON:
	RET

// func conv3RowFilterNEON(acc, dy, x *float32, n16 int)
// acc[16s + i%16] += dy[i]·x[i+s], 16 elements at a time; the 48 sums live
// in V0..V11 over the loop.
TEXT ·conv3RowFilterNEON(SB), NOSPLIT, $0-32
	MOVD acc+0(FP), R0
	MOVD dy+8(FP), R1
	MOVD x+16(FP), R2
	MOVD n16+24(FP), R3
	MOVD R0, R4
	VLD1.P 64(R4), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R4), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1   (R4), [V8.S4, V9.S4, V10.S4, V11.S4]

filter:
	CBZ    R3, filterdone
	VLD1.P 64(R1), [V12.S4, V13.S4, V14.S4, V15.S4]
	ADD    $0, R2, R5
	VLD1   (R5), [V16.S4, V17.S4, V18.S4, V19.S4]
	WORD $0x6e2cde14 // FMUL V20.S4, V16.S4, V12.S4
	WORD $0x4e34d400 // FADD V0.S4, V0.S4, V20.S4
	WORD $0x6e2dde34 // FMUL V20.S4, V17.S4, V13.S4
	WORD $0x4e34d421 // FADD V1.S4, V1.S4, V20.S4
	WORD $0x6e2ede54 // FMUL V20.S4, V18.S4, V14.S4
	WORD $0x4e34d442 // FADD V2.S4, V2.S4, V20.S4
	WORD $0x6e2fde74 // FMUL V20.S4, V19.S4, V15.S4
	WORD $0x4e34d463 // FADD V3.S4, V3.S4, V20.S4
	ADD    $4, R2, R5
	VLD1   (R5), [V16.S4, V17.S4, V18.S4, V19.S4]
	WORD $0x6e2cde14 // FMUL V20.S4, V16.S4, V12.S4
	WORD $0x4e34d484 // FADD V4.S4, V4.S4, V20.S4
	WORD $0x6e2dde34 // FMUL V20.S4, V17.S4, V13.S4
	WORD $0x4e34d4a5 // FADD V5.S4, V5.S4, V20.S4
	WORD $0x6e2ede54 // FMUL V20.S4, V18.S4, V14.S4
	WORD $0x4e34d4c6 // FADD V6.S4, V6.S4, V20.S4
	WORD $0x6e2fde74 // FMUL V20.S4, V19.S4, V15.S4
	WORD $0x4e34d4e7 // FADD V7.S4, V7.S4, V20.S4
	ADD    $8, R2, R5
	VLD1   (R5), [V16.S4, V17.S4, V18.S4, V19.S4]
	WORD $0x6e2cde14 // FMUL V20.S4, V16.S4, V12.S4
	WORD $0x4e34d508 // FADD V8.S4, V8.S4, V20.S4
	WORD $0x6e2dde34 // FMUL V20.S4, V17.S4, V13.S4
	WORD $0x4e34d529 // FADD V9.S4, V9.S4, V20.S4
	WORD $0x6e2ede54 // FMUL V20.S4, V18.S4, V14.S4
	WORD $0x4e34d54a // FADD V10.S4, V10.S4, V20.S4
	WORD $0x6e2fde74 // FMUL V20.S4, V19.S4, V15.S4
	WORD $0x4e34d56b // FADD V11.S4, V11.S4, V20.S4
	ADD    $64, R2
	SUB    $16, R3
	B      filter

filterdone:
	MOVD   R0, R4
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R4)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R4)
	VST1   [V8.S4, V9.S4, V10.S4, V11.S4], (R4)
	RET
