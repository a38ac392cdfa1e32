//go:build !purego

#include "textflag.h"

// Max pooling 2x2 / 2 forward, 16 windows of a row pair at a time: the two
// rows' elementwise maxima (32 of them, in two registers), then the maxima
// of their even and odd elements (VPERMT2PS picks them out).

// Indices of the even and odd elements of a 32-float pair of registers.
DATA evens<>+0(SB)/4, $0
DATA evens<>+4(SB)/4, $2
DATA evens<>+8(SB)/4, $4
DATA evens<>+12(SB)/4, $6
DATA evens<>+16(SB)/4, $8
DATA evens<>+20(SB)/4, $10
DATA evens<>+24(SB)/4, $12
DATA evens<>+28(SB)/4, $14
DATA evens<>+32(SB)/4, $16
DATA evens<>+36(SB)/4, $18
DATA evens<>+40(SB)/4, $20
DATA evens<>+44(SB)/4, $22
DATA evens<>+48(SB)/4, $24
DATA evens<>+52(SB)/4, $26
DATA evens<>+56(SB)/4, $28
DATA evens<>+60(SB)/4, $30
GLOBL evens<>(SB), RODATA|NOPTR, $64

DATA odds<>+0(SB)/4, $1
DATA odds<>+4(SB)/4, $3
DATA odds<>+8(SB)/4, $5
DATA odds<>+12(SB)/4, $7
DATA odds<>+16(SB)/4, $9
DATA odds<>+20(SB)/4, $11
DATA odds<>+24(SB)/4, $13
DATA odds<>+28(SB)/4, $15
DATA odds<>+32(SB)/4, $17
DATA odds<>+36(SB)/4, $19
DATA odds<>+40(SB)/4, $21
DATA odds<>+44(SB)/4, $23
DATA odds<>+48(SB)/4, $25
DATA odds<>+52(SB)/4, $27
DATA odds<>+56(SB)/4, $29
DATA odds<>+60(SB)/4, $31
GLOBL odds<>(SB), RODATA|NOPTR, $64

// GOMAX sets d = max(a, b) as Go's max does: VMAXPS, then a&b where the two
// are equal (so +0 beats -0) and a+b (a NaN) where they are unordered.
// Clobbers K6, K7.
#define GOMAX(a, b, d) \
	VMAXPS  b, a, d \
	VCMPPS  $0x00, b, a, K6 \
	VPANDD  b, a, K6, d \
	VCMPPS  $0x03, b, a, K7 \
	VADDPS  b, a, K7, d

// BLOCK pools 16 windows from Z0, Z1 (row 0) and Z2, Z3 (row 1) into Z4.
#define BLOCK \
	GOMAX(Z0, Z2, Z8) \
	GOMAX(Z1, Z3, Z9) \
	VMOVAPS   Z8, Z10 \
	VPERMT2PS Z9, Z30, Z10 \
	VPERMT2PS Z9, Z31, Z8 \
	GOMAX(Z10, Z8, Z4)

// func maxPool2AVX512(y, x *float32, w, ow, oh int, lo, hi, out uint64)
TEXT ·maxPool2AVX512(SB), NOSPLIT, $0-64
	MOVQ    y+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    w+16(FP), R8
	SHLQ    $2, R8                // row stride in bytes
	MOVQ    ow+24(FP), R9
	MOVQ    oh+32(FP), R10
	MOVQ    lo+40(FP), AX
	KMOVW   AX, K1
	MOVQ    hi+48(FP), AX
	KMOVW   AX, K2
	MOVQ    out+56(FP), AX
	KMOVW   AX, K3
	VMOVUPS evens<>(SB), Z30
	VMOVUPS odds<>(SB), Z31

row:
	LEAQ (SI)(R8*1), R11 // row 1
	MOVQ SI, R12
	MOVQ DI, R13
	MOVQ R9, DX

full:
	CMPQ    DX, $16
	JB      tail
	VMOVUPS (R12), Z0
	VMOVUPS 64(R12), Z1
	VMOVUPS (R11), Z2
	VMOVUPS 64(R11), Z3
	BLOCK
	VMOVUPS Z4, (R13)
	ADDQ    $128, R12
	ADDQ    $128, R11
	ADDQ    $64, R13
	SUBQ    $16, DX
	JMP     full

tail:
	TESTQ     DX, DX
	JZ        next
	VMOVUPS.Z (R12), K1, Z0
	VMOVUPS.Z 64(R12), K2, Z1
	VMOVUPS.Z (R11), K1, Z2
	VMOVUPS.Z 64(R11), K2, Z3
	BLOCK
	VMOVUPS   Z4, K3, (R13)

next:
	LEAQ (SI)(R8*2), SI // two input rows down
	LEAQ (DI)(R9*4), DI // one output row down
	DECQ R10
	JNZ  row
	VZEROUPPER
	RET
