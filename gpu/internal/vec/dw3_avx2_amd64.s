//go:build !purego

#include "textflag.h"

// The 3x3 depthwise rows with AVX2, 8 outputs at a time over n8 (a multiple
// of 8; the Go twin does the tail): each tap loaded, multiplied by its
// broadcast weight (Y7-Y15) and added to an accumulator that starts at +0,
// in the Go twin's order (VMULPS then VADDPS: no fused multiply-add, so the
// bits match), as dw3_amd64.s does with 16 lanes.

// WEIGHTS8 broadcasts w[0..8] (pointer in AX) into Y7..Y15.
#define WEIGHTS8 \
	VBROADCASTSS 0(AX), Y7 \
	VBROADCASTSS 4(AX), Y8 \
	VBROADCASTSS 8(AX), Y9 \
	VBROADCASTSS 12(AX), Y10 \
	VBROADCASTSS 16(AX), Y11 \
	VBROADCASTSS 20(AX), Y12 \
	VBROADCASTSS 24(AX), Y13 \
	VBROADCASTSS 28(AX), Y14 \
	VBROADCASTSS 32(AX), Y15

// TAP8 adds yw times the 8 floats at off(row)(R10*1) to Y1.
#define TAP8(yw, row, off) \
	VMOVUPS off(row)(R10*1), Y0 \
	VMULPS  yw, Y0, Y0 \
	VADDPS  Y0, Y1, Y1

// func conv3RowsAVX2(out, x0, x1, x2, w *float32, n8 int)
TEXT ·conv3RowsAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x0+8(FP), SI
	MOVQ x1+16(FP), R8
	MOVQ x2+24(FP), R9
	MOVQ w+32(FP), AX
	MOVQ n8+40(FP), DX
	WEIGHTS8
	XORQ R10, R10

rows:
	CMPQ   DX, $8
	JB     rowsdone
	VXORPS Y1, Y1, Y1
	TAP8(Y7, SI, 0)
	TAP8(Y8, SI, 4)
	TAP8(Y9, SI, 8)
	TAP8(Y10, R8, 0)
	TAP8(Y11, R8, 4)
	TAP8(Y12, R8, 8)
	TAP8(Y13, R9, 0)
	TAP8(Y14, R9, 4)
	TAP8(Y15, R9, 8)
	VMOVUPS Y1, (DI)(R10*1)
	ADDQ    $32, R10
	SUBQ    $8, DX
	JMP     rows

rowsdone:
	VZEROUPPER
	RET

// func conv3RowsFlippedAVX2(out, x0, x1, x2, w *float32, n8 int)
// The taps of each row in reverse: w[3r]·x_r[i+2], w[3r+1]·x_r[i+1],
// w[3r+2]·x_r[i].
TEXT ·conv3RowsFlippedAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x0+8(FP), SI
	MOVQ x1+16(FP), R8
	MOVQ x2+24(FP), R9
	MOVQ w+32(FP), AX
	MOVQ n8+40(FP), DX
	WEIGHTS8
	XORQ R10, R10

flipped:
	CMPQ   DX, $8
	JB     flippeddone
	VXORPS Y1, Y1, Y1
	TAP8(Y7, SI, 8)
	TAP8(Y8, SI, 4)
	TAP8(Y9, SI, 0)
	TAP8(Y10, R8, 8)
	TAP8(Y11, R8, 4)
	TAP8(Y12, R8, 0)
	TAP8(Y13, R9, 8)
	TAP8(Y14, R9, 4)
	TAP8(Y15, R9, 0)
	VMOVUPS Y1, (DI)(R10*1)
	ADDQ    $32, R10
	SUBQ    $8, DX
	JMP     flipped

flippeddone:
	VZEROUPPER
	RET

// FTAP adds dy (Y0 low lanes, Y1 high) times the 16 floats at off(SI) to
// the sums lo, hi; clobbers Y2 and Y3.
#define FTAP(off, lo, hi) \
	VMOVUPS off(SI), Y2 \
	VMOVUPS off+32(SI), Y3 \
	VMULPS  Y0, Y2, Y2 \
	VMULPS  Y1, Y3, Y3 \
	VADDPS  Y2, lo, lo \
	VADDPS  Y3, hi, hi

// func conv3RowFilterAVX2(acc, dy, x *float32, n16 int)
// acc[16s + i%16] += dy[i]·x[i+s] for s in 0..2, 16 elements at a time (n16
// a multiple of 16): the 48 sums live in Y4..Y9 over the loop.
TEXT ·conv3RowFilterAVX2(SB), NOSPLIT, $0-32
	MOVQ    acc+0(FP), DI
	MOVQ    dy+8(FP), R8
	MOVQ    x+16(FP), SI
	MOVQ    n16+24(FP), DX
	VMOVUPS 0(DI), Y4
	VMOVUPS 32(DI), Y5
	VMOVUPS 64(DI), Y6
	VMOVUPS 96(DI), Y7
	VMOVUPS 128(DI), Y8
	VMOVUPS 160(DI), Y9

filter:
	CMPQ    DX, $16
	JB      filterdone
	VMOVUPS 0(R8), Y0
	VMOVUPS 32(R8), Y1
	FTAP(0, Y4, Y5)
	FTAP(4, Y6, Y7)
	FTAP(8, Y8, Y9)
	ADDQ    $64, R8
	ADDQ    $64, SI
	SUBQ    $16, DX
	JMP     filter

filterdone:
	VMOVUPS Y4, 0(DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	VMOVUPS Y8, 128(DI)
	VMOVUPS Y9, 160(DI)
	VZEROUPPER
	RET
