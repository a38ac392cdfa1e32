//go:build !purego

#include "textflag.h"

// The 3x3 depthwise rows, 16 outputs at a time: nine masked-or-full loads,
// each multiplied by its broadcast weight (Z16-Z24) and added to an
// accumulator that starts at +0, in the Go twin's order (VMULPS then
// VADDPS: no fused multiply-add, so the bits match). The n%16 tail is one
// masked pass (K1): masked-off lanes are neither read nor written.

// TAILMASK sets K1 to the low (reg & 15) bits; clobbers CX and BX.
#define TAILMASK(reg) \
	MOVQ reg, CX \
	ANDQ $15, CX \
	MOVL $1, BX \
	SHLL CX, BX \
	DECL BX \
	KMOVW BX, K1

// WEIGHTS broadcasts w[0..8] (pointer in AX) into Z16..Z24.
#define WEIGHTS \
	VBROADCASTSS 0(AX), Z16 \
	VBROADCASTSS 4(AX), Z17 \
	VBROADCASTSS 8(AX), Z18 \
	VBROADCASTSS 12(AX), Z19 \
	VBROADCASTSS 16(AX), Z20 \
	VBROADCASTSS 20(AX), Z21 \
	VBROADCASTSS 24(AX), Z22 \
	VBROADCASTSS 28(AX), Z23 \
	VBROADCASTSS 32(AX), Z24

// TAP adds zw times the 16 floats at off(row)(R10*1) to Z1.
#define TAP(zw, row, off) \
	VMOVUPS off(row)(R10*1), Z0 \
	VMULPS  zw, Z0, Z0 \
	VADDPS  Z0, Z1, Z1

// TAPM is TAP with the load masked by K1.
#define TAPM(zw, row, off) \
	VMOVUPS.Z off(row)(R10*1), K1, Z0 \
	VMULPS    zw, Z0, Z0 \
	VADDPS    Z0, Z1, Z1

// func conv3RowsAVX512(out, x0, x1, x2, w *float32, n int)
TEXT ·conv3RowsAVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x0+8(FP), SI
	MOVQ x1+16(FP), R8
	MOVQ x2+24(FP), R9
	MOVQ w+32(FP), AX
	MOVQ n+40(FP), DX
	TAILMASK(DX)
	WEIGHTS
	XORQ R10, R10

convfull:
	CMPQ   DX, $16
	JB     convtail
	VPXORD Z1, Z1, Z1
	TAP(Z16, SI, 0)
	TAP(Z17, SI, 4)
	TAP(Z18, SI, 8)
	TAP(Z19, R8, 0)
	TAP(Z20, R8, 4)
	TAP(Z21, R8, 8)
	TAP(Z22, R9, 0)
	TAP(Z23, R9, 4)
	TAP(Z24, R9, 8)
	VMOVUPS Z1, (DI)(R10*1)
	ADDQ    $64, R10
	SUBQ    $16, DX
	JMP     convfull

convtail:
	TESTQ  DX, DX
	JZ     convdone
	VPXORD Z1, Z1, Z1
	TAPM(Z16, SI, 0)
	TAPM(Z17, SI, 4)
	TAPM(Z18, SI, 8)
	TAPM(Z19, R8, 0)
	TAPM(Z20, R8, 4)
	TAPM(Z21, R8, 8)
	TAPM(Z22, R9, 0)
	TAPM(Z23, R9, 4)
	TAPM(Z24, R9, 8)
	VMOVUPS Z1, K1, (DI)(R10*1)

convdone:
	VZEROUPPER
	RET

// func conv3RowsFlippedAVX512(out, x0, x1, x2, w *float32, n int)
TEXT ·conv3RowsFlippedAVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x0+8(FP), SI
	MOVQ x1+16(FP), R8
	MOVQ x2+24(FP), R9
	MOVQ w+32(FP), AX
	MOVQ n+40(FP), DX
	TAILMASK(DX)
	WEIGHTS
	XORQ R10, R10

flipfull:
	CMPQ   DX, $16
	JB     fliptail
	VPXORD Z1, Z1, Z1
	TAP(Z16, SI, 8)
	TAP(Z17, SI, 4)
	TAP(Z18, SI, 0)
	TAP(Z19, R8, 8)
	TAP(Z20, R8, 4)
	TAP(Z21, R8, 0)
	TAP(Z22, R9, 8)
	TAP(Z23, R9, 4)
	TAP(Z24, R9, 0)
	VMOVUPS Z1, (DI)(R10*1)
	ADDQ    $64, R10
	SUBQ    $16, DX
	JMP     flipfull

fliptail:
	TESTQ  DX, DX
	JZ     flipdone
	VPXORD Z1, Z1, Z1
	TAPM(Z16, SI, 8)
	TAPM(Z17, SI, 4)
	TAPM(Z18, SI, 0)
	TAPM(Z19, R8, 8)
	TAPM(Z20, R8, 4)
	TAPM(Z21, R8, 0)
	TAPM(Z22, R9, 8)
	TAPM(Z23, R9, 4)
	TAPM(Z24, R9, 0)
	VMOVUPS Z1, K1, (DI)(R10*1)

flipdone:
	VZEROUPPER
	RET

// FTAP adds Z0 (dy) times the 16 floats at off(SI)(R10*1) to acc.
#define FTAP(acc, off) \
	VMOVUPS off(SI)(R10*1), Z1 \
	VMULPS  Z1, Z0, Z1 \
	VADDPS  Z1, acc, acc

// FTAPM is FTAP for the tail: masked load, and only K1's lanes of acc
// change.
#define FTAPM(acc, off) \
	VMOVUPS.Z off(SI)(R10*1), K1, Z1 \
	VMULPS    Z1, Z0, Z1 \
	VADDPS    Z1, acc, K1, acc

// func conv3RowFilterAVX512(acc, dy, x *float32, n int)
// acc[16s + i%16] += dy[i]*x[i+s], s = 0..2: lane l of Z16+s is acc[16s+l].
TEXT ·conv3RowFilterAVX512(SB), NOSPLIT, $0-32
	MOVQ    acc+0(FP), DI
	MOVQ    dy+8(FP), R8
	MOVQ    x+16(FP), SI
	MOVQ    n+24(FP), DX
	TAILMASK(DX)
	VMOVUPS (DI), Z16
	VMOVUPS 64(DI), Z17
	VMOVUPS 128(DI), Z18
	XORQ    R10, R10

gfull:
	CMPQ    DX, $16
	JB      gtail
	VMOVUPS (R8)(R10*1), Z0
	FTAP(Z16, 0)
	FTAP(Z17, 4)
	FTAP(Z18, 8)
	ADDQ    $64, R10
	SUBQ    $16, DX
	JMP     gfull

gtail:
	TESTQ     DX, DX
	JZ        gdone
	VMOVUPS.Z (R8)(R10*1), K1, Z0
	FTAPM(Z16, 0)
	FTAPM(Z17, 4)
	FTAPM(Z18, 8)

gdone:
	VMOVUPS Z16, (DI)
	VMOVUPS Z17, 64(DI)
	VMOVUPS Z18, 128(DI)
	VZEROUPPER
	RET
