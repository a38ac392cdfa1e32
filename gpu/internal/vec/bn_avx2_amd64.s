//go:build !purego

#include "textflag.h"

// Batch norm's loops with AVX2 over n8 elements (a multiple of 8; the Go
// twin does the tail), rounding as the Go twins do (no fused multiply-add).
// The float64 sums keep the twins' eight lanes, element i in lane i%8, as
// two YMM registers of four (lanes 0-3 from the low four floats of each
// group of eight, 4-7 from the high four), read from and written back to
// the caller's [8]float64, which the twin then carries on over the tail.

// func bnApplyAVX2(y, x *float32, n8 int, mean, scale, shift float32)
// y = float32((x - mean)·scale) + shift.
TEXT ·bnApplyAVX2(SB), NOSPLIT, $0-36
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n8+16(FP), DX
	VBROADCASTSS mean+24(FP), Y13
	VBROADCASTSS scale+28(FP), Y14
	VBROADCASTSS shift+32(FP), Y15

apply:
	CMPQ    DX, $8
	JB      applydone
	VMOVUPS (SI), Y0
	VSUBPS  Y13, Y0, Y0
	VMULPS  Y14, Y0, Y0
	VADDPS  Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, DX
	JMP     apply

applydone:
	VZEROUPPER
	RET

// func bnBackwardDataAVX2(dx, dy, x *float32, n8 int, k, b, a, mean float32)
// dx = (float32(k·dy) - b) - float32(a·(x - mean)).
TEXT ·bnBackwardDataAVX2(SB), NOSPLIT, $0-48
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), R8
	MOVQ         x+16(FP), SI
	MOVQ         n8+24(FP), DX
	VBROADCASTSS k+32(FP), Y12
	VBROADCASTSS b+36(FP), Y13
	VBROADCASTSS a+40(FP), Y14
	VBROADCASTSS mean+44(FP), Y15

bwd:
	CMPQ    DX, $8
	JB      bwddone
	VMOVUPS (R8), Y0
	VMULPS  Y12, Y0, Y0
	VSUBPS  Y13, Y0, Y0
	VMOVUPS (SI), Y1
	VSUBPS  Y15, Y1, Y1
	VMULPS  Y14, Y1, Y1
	VSUBPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, R8
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, DX
	JMP     bwd

bwddone:
	VZEROUPPER
	RET

// func sumDyDevAVX2(s, t *float64, dy, x *float32, n8 int, mean float32)
// s[i%8] += float64(dy[i]); t[i%8] += float64(dy[i])·float64(x[i] - mean).
TEXT ·sumDyDevAVX2(SB), NOSPLIT, $0-44
	MOVQ         s+0(FP), AX
	MOVQ         t+8(FP), BX
	MOVQ         dy+16(FP), R8
	MOVQ         x+24(FP), SI
	MOVQ         n8+32(FP), DX
	VBROADCASTSS mean+40(FP), Y15
	VMOVUPD      0(AX), Y8
	VMOVUPD      32(AX), Y9
	VMOVUPD      0(BX), Y10
	VMOVUPD      32(BX), Y11

dev:
	CMPQ         DX, $8
	JB           devdone
	VMOVUPS      (SI), Y2
	VSUBPS       Y15, Y2, Y2
	VCVTPS2PD    X2, Y3
	VEXTRACTF128 $1, Y2, X4
	VCVTPS2PD    X4, Y4
	VCVTPS2PD    0(R8), Y5
	VCVTPS2PD    16(R8), Y6
	VADDPD       Y5, Y8, Y8
	VADDPD       Y6, Y9, Y9
	VMULPD       Y5, Y3, Y3
	VMULPD       Y6, Y4, Y4
	VADDPD       Y3, Y10, Y10
	VADDPD       Y4, Y11, Y11
	ADDQ         $32, R8
	ADDQ         $32, SI
	SUBQ         $8, DX
	JMP          dev

devdone:
	VMOVUPD Y8, 0(AX)
	VMOVUPD Y9, 32(AX)
	VMOVUPD Y10, 0(BX)
	VMOVUPD Y11, 32(BX)
	VZEROUPPER
	RET

// func sum64AVX2(l *float64, s *float32, n8 int)
// l[i%8] += float64(s[i]).
TEXT ·sum64AVX2(SB), NOSPLIT, $0-24
	MOVQ    l+0(FP), AX
	MOVQ    s+8(FP), SI
	MOVQ    n8+16(FP), DX
	VMOVUPD 0(AX), Y8
	VMOVUPD 32(AX), Y9

sum:
	CMPQ      DX, $8
	JB        sumdone
	VCVTPS2PD 0(SI), Y0
	VCVTPS2PD 16(SI), Y1
	VADDPD    Y0, Y8, Y8
	VADDPD    Y1, Y9, Y9
	ADDQ      $32, SI
	SUBQ      $8, DX
	JMP       sum

sumdone:
	VMOVUPD Y8, 0(AX)
	VMOVUPD Y9, 32(AX)
	VZEROUPPER
	RET

// func sqDev64AVX2(l *float64, s *float32, n8 int, mean float64)
// l[i%8] += (float64(s[i]) - mean)², the product rounded before the add.
TEXT ·sqDev64AVX2(SB), NOSPLIT, $0-32
	MOVQ         l+0(FP), AX
	MOVQ         s+8(FP), SI
	MOVQ         n8+16(FP), DX
	VBROADCASTSD mean+24(FP), Y15
	VMOVUPD      0(AX), Y8
	VMOVUPD      32(AX), Y9

sq:
	CMPQ      DX, $8
	JB        sqdone
	VCVTPS2PD 0(SI), Y0
	VCVTPS2PD 16(SI), Y1
	VSUBPD    Y15, Y0, Y0
	VSUBPD    Y15, Y1, Y1
	VMULPD    Y0, Y0, Y0
	VMULPD    Y1, Y1, Y1
	VADDPD    Y0, Y8, Y8
	VADDPD    Y1, Y9, Y9
	ADDQ      $32, SI
	SUBQ      $8, DX
	JMP       sq

sqdone:
	VMOVUPD Y8, 0(AX)
	VMOVUPD Y9, 32(AX)
	VZEROUPPER
	RET
