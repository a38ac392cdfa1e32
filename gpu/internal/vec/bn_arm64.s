//go:build !purego

#include "textflag.h"

// Batch norm's loops with NEON over n4 elements (the lane sums: n8), the Go
// twin doing the tail; every operation a separate FSUB, FMUL or FADD as the
// twins round (never FMLA), so the bits are the twins'. The float64 sums
// keep the twins' eight lanes, element i in lane i%8, as four D2 registers
// (lanes 0-1, 2-3, 4-5, 6-7: FCVTL and FCVTL2 of each group's two halves),
// read from and written back to the caller's [8]float64. The Go assembler
// has no vector floating-point arithmetic, so it is WORDs with the
// instruction in a comment.

// func bnApplyNEON(y, x *float32, n4 int, mean, scale, shift float32)
// y = float32((x - mean)·scale) + shift.
TEXT ·bnApplyNEON(SB), NOSPLIT, $0-36
	MOVD  y+0(FP), R0
	MOVD  x+8(FP), R1
	MOVD  n4+16(FP), R2
	FMOVS mean+24(FP), F13
	FMOVS scale+28(FP), F14
	FMOVS shift+32(FP), F15
	VDUP  V13.S[0], V13.S4
	VDUP  V14.S[0], V14.S4
	VDUP  V15.S[0], V15.S4

apply:
	CBZ    R2, applydone
	VLD1.P 16(R1), [V0.S4]
	WORD $0x4eadd400 // FSUB V0.S4, V0.S4, V13.S4
	WORD $0x6e2edc00 // FMUL V0.S4, V0.S4, V14.S4
	WORD $0x4e2fd400 // FADD V0.S4, V0.S4, V15.S4
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2
	B      apply

applydone:
	RET

// func bnBackwardDataNEON(dx, dy, x *float32, n4 int, k, b, a, mean float32)
// dx = (float32(k·dy) - b) - float32(a·(x - mean)).
TEXT ·bnBackwardDataNEON(SB), NOSPLIT, $0-48
	MOVD  dx+0(FP), R0
	MOVD  dy+8(FP), R3
	MOVD  x+16(FP), R1
	MOVD  n4+24(FP), R2
	FMOVS k+32(FP), F12
	FMOVS b+36(FP), F13
	FMOVS a+40(FP), F14
	FMOVS mean+44(FP), F15
	VDUP  V12.S[0], V12.S4
	VDUP  V13.S[0], V13.S4
	VDUP  V14.S[0], V14.S4
	VDUP  V15.S[0], V15.S4

bwd:
	CBZ    R2, bwddone
	VLD1.P 16(R3), [V0.S4]
	VLD1.P 16(R1), [V1.S4]
	WORD $0x6e20dd80 // FMUL V0.S4, V12.S4, V0.S4
	WORD $0x4eadd400 // FSUB V0.S4, V0.S4, V13.S4
	WORD $0x4eafd421 // FSUB V1.S4, V1.S4, V15.S4
	WORD $0x6e21ddc1 // FMUL V1.S4, V14.S4, V1.S4
	WORD $0x4ea1d400 // FSUB V0.S4, V0.S4, V1.S4
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2
	B      bwd

bwddone:
	RET

// func sumDyDevNEON(s, t *float64, dy, x *float32, n8 int, mean float32)
// s[i%8] += float64(dy[i]); t[i%8] += float64(dy[i])·float64(x[i] - mean).
TEXT ·sumDyDevNEON(SB), NOSPLIT, $0-44
	MOVD  s+0(FP), R0
	MOVD  t+8(FP), R1
	MOVD  dy+16(FP), R3
	MOVD  x+24(FP), R4
	MOVD  n8+32(FP), R2
	FMOVS mean+40(FP), F15
	VDUP  V15.S[0], V15.S4
	VLD1  (R0), [V16.D2, V17.D2, V18.D2, V19.D2]
	VLD1  (R1), [V20.D2, V21.D2, V22.D2, V23.D2]

dev:
	CBZ    R2, devdone
	VLD1.P 32(R3), [V0.S4, V1.S4]
	VLD1.P 32(R4), [V2.S4, V3.S4]
	WORD $0x4eafd442 // FSUB V2.S4, V2.S4, V15.S4
	WORD $0x4eafd463 // FSUB V3.S4, V3.S4, V15.S4
	WORD $0x0e617804 // FCVTL V4.D2, V0.S2
	WORD $0x4e617805 // FCVTL2 V5.D2, V0.S4
	WORD $0x0e617826 // FCVTL V6.D2, V1.S2
	WORD $0x4e617827 // FCVTL2 V7.D2, V1.S4
	WORD $0x0e617848 // FCVTL V8.D2, V2.S2
	WORD $0x4e617849 // FCVTL2 V9.D2, V2.S4
	WORD $0x0e61786a // FCVTL V10.D2, V3.S2
	WORD $0x4e61786b // FCVTL2 V11.D2, V3.S4
	WORD $0x4e64d610 // FADD V16.D2, V16.D2, V4.D2
	WORD $0x4e65d631 // FADD V17.D2, V17.D2, V5.D2
	WORD $0x4e66d652 // FADD V18.D2, V18.D2, V6.D2
	WORD $0x4e67d673 // FADD V19.D2, V19.D2, V7.D2
	WORD $0x6e68dc88 // FMUL V8.D2, V4.D2, V8.D2
	WORD $0x6e69dca9 // FMUL V9.D2, V5.D2, V9.D2
	WORD $0x6e6adcca // FMUL V10.D2, V6.D2, V10.D2
	WORD $0x6e6bdceb // FMUL V11.D2, V7.D2, V11.D2
	WORD $0x4e68d694 // FADD V20.D2, V20.D2, V8.D2
	WORD $0x4e69d6b5 // FADD V21.D2, V21.D2, V9.D2
	WORD $0x4e6ad6d6 // FADD V22.D2, V22.D2, V10.D2
	WORD $0x4e6bd6f7 // FADD V23.D2, V23.D2, V11.D2
	SUB    $8, R2
	B      dev

devdone:
	VST1 [V16.D2, V17.D2, V18.D2, V19.D2], (R0)
	VST1 [V20.D2, V21.D2, V22.D2, V23.D2], (R1)
	RET

// func sum64NEON(l *float64, s *float32, n8 int)
// l[i%8] += float64(s[i]).
TEXT ·sum64NEON(SB), NOSPLIT, $0-24
	MOVD l+0(FP), R0
	MOVD s+8(FP), R1
	MOVD n8+16(FP), R2
	VLD1 (R0), [V16.D2, V17.D2, V18.D2, V19.D2]

sum:
	CBZ    R2, sumdone
	VLD1.P 32(R1), [V0.S4, V1.S4]
	WORD $0x0e617804 // FCVTL V4.D2, V0.S2
	WORD $0x4e617805 // FCVTL2 V5.D2, V0.S4
	WORD $0x0e617826 // FCVTL V6.D2, V1.S2
	WORD $0x4e617827 // FCVTL2 V7.D2, V1.S4
	WORD $0x4e64d610 // FADD V16.D2, V16.D2, V4.D2
	WORD $0x4e65d631 // FADD V17.D2, V17.D2, V5.D2
	WORD $0x4e66d652 // FADD V18.D2, V18.D2, V6.D2
	WORD $0x4e67d673 // FADD V19.D2, V19.D2, V7.D2
	SUB    $8, R2
	B      sum

sumdone:
	VST1 [V16.D2, V17.D2, V18.D2, V19.D2], (R0)
	RET

// func sqDev64NEON(l *float64, s *float32, n8 int, mean float64)
// l[i%8] += (float64(s[i]) - mean)², the product rounded before the add.
TEXT ·sqDev64NEON(SB), NOSPLIT, $0-32
	MOVD  l+0(FP), R0
	MOVD  s+8(FP), R1
	MOVD  n8+16(FP), R2
	FMOVD mean+24(FP), F15
	VDUP  V15.D[0], V15.D2
	VLD1  (R0), [V16.D2, V17.D2, V18.D2, V19.D2]

sq:
	CBZ    R2, sqdone
	VLD1.P 32(R1), [V0.S4, V1.S4]
	WORD $0x0e617804 // FCVTL V4.D2, V0.S2
	WORD $0x4e617805 // FCVTL2 V5.D2, V0.S4
	WORD $0x0e617826 // FCVTL V6.D2, V1.S2
	WORD $0x4e617827 // FCVTL2 V7.D2, V1.S4
	WORD $0x4eefd484 // FSUB V4.D2, V4.D2, V15.D2
	WORD $0x4eefd4a5 // FSUB V5.D2, V5.D2, V15.D2
	WORD $0x4eefd4c6 // FSUB V6.D2, V6.D2, V15.D2
	WORD $0x4eefd4e7 // FSUB V7.D2, V7.D2, V15.D2
	WORD $0x6e64dc84 // FMUL V4.D2, V4.D2, V4.D2
	WORD $0x6e65dca5 // FMUL V5.D2, V5.D2, V5.D2
	WORD $0x6e66dcc6 // FMUL V6.D2, V6.D2, V6.D2
	WORD $0x6e67dce7 // FMUL V7.D2, V7.D2, V7.D2
	WORD $0x4e64d610 // FADD V16.D2, V16.D2, V4.D2
	WORD $0x4e65d631 // FADD V17.D2, V17.D2, V5.D2
	WORD $0x4e66d652 // FADD V18.D2, V18.D2, V6.D2
	WORD $0x4e67d673 // FADD V19.D2, V19.D2, V7.D2
	SUB    $8, R2
	B      sq

sqdone:
	VST1 [V16.D2, V17.D2, V18.D2, V19.D2], (R0)
	RET
