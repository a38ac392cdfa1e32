//go:build !purego

#include "textflag.h"

// The loops run 16 floats at a time and finish with one masked load and
// store; K1 holds the mask of the n%16 tail. Masked-off lanes are neither
// read (no fault past the slice) nor written.

// TAILMASK sets K1 to the low (reg & 15) bits; clobbers CX and BX.
#define TAILMASK(reg) \
	MOVQ reg, CX \
	ANDQ $15, CX \
	MOVL $1, BX \
	SHLL CX, BX \
	DECL BX \
	KMOVW BX, K1

// func copyRowsAVX512(dst *float32, ldd int, src *float32, lds int, rows, n int)
TEXT ·copyRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ n+40(FP), DX
	TAILMASK(DX)
	MOVQ rows+32(FP), CX

crow:
	MOVQ DX, R10
	MOVQ DI, R11
	MOVQ SI, R12
	CMPQ R10, $16
	JB   ctail

cfull:
	VMOVUPS (R12), Z0
	VMOVUPS Z0, (R11)
	ADDQ    $64, R11
	ADDQ    $64, R12
	SUBQ    $16, R10
	CMPQ    R10, $16
	JAE     cfull

ctail:
	TESTQ     R10, R10
	JZ        cnext
	VMOVUPS.Z (R12), K1, Z0
	VMOVUPS   Z0, K1, (R11)

cnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  crow
	VZEROUPPER
	RET

// func addRowsAVX512(dst *float32, ldd int, src *float32, lds int, rows, n int)
TEXT ·addRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ n+40(FP), DX
	TAILMASK(DX)
	MOVQ rows+32(FP), CX

arow:
	MOVQ DX, R10
	MOVQ DI, R11
	MOVQ SI, R12
	CMPQ R10, $16
	JB   atail

afull:
	VMOVUPS (R12), Z0
	VADDPS  (R11), Z0, Z0
	VMOVUPS Z0, (R11)
	ADDQ    $64, R11
	ADDQ    $64, R12
	SUBQ    $16, R10
	CMPQ    R10, $16
	JAE     afull

atail:
	TESTQ     R10, R10
	JZ        anext
	VMOVUPS.Z (R12), K1, Z0
	VMOVUPS.Z (R11), K1, Z1
	VADDPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (R11)

anext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  arow
	VZEROUPPER
	RET

// func addShiftedAVX512(dst, src *float32, lds, taps, n int)
// dst[s+j] += src[s*lds+j] for s < taps, j < n, with n+taps-1 <= 16: dst
// stays in Z0; tap s is loaded into lanes s..s+n-1 (mask K2, shifted left
// once per tap) from src + s*lds - s floats, so that lane j reads src[s*lds+j-s].
TEXT ·addShiftedAVX512(SB), NOSPLIT, $0-40
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R9
	SHLQ $2, R9
	SUBQ $4, R9
	MOVQ taps+24(FP), R10
	MOVQ n+32(FP), DX
	MOVQ DX, CX
	MOVL $1, BX
	SHLL CX, BX
	DECL BX
	KMOVW BX, K2
	LEAQ -1(DX)(R10*1), CX
	MOVL $1, BX
	SHLL CX, BX
	DECL BX
	KMOVW BX, K1
	MOVQ dst+0(FP), DI
	VMOVUPS.Z (DI), K1, Z0

htap:
	VMOVUPS.Z (SI), K2, Z1
	VADDPS    Z1, Z0, Z0
	KSHIFTLW  $1, K2, K2
	ADDQ      R9, SI
	DECQ      R10
	JNZ       htap
	VMOVUPS   Z0, K1, (DI)
	VZEROUPPER
	RET

// func reluAVX512(y, x *float32, n int)
// y = x where !(x <= 0) (x > 0 or NaN), +0 elsewhere: predicate NLE_UQ.
TEXT ·reluAVX512(SB), NOSPLIT, $0-24
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), DX
	TAILMASK(DX)
	VPXORD Z1, Z1, Z1

rfull:
	CMPQ      DX, $16
	JB        rtail
	VMOVUPS   (SI), Z0
	VCMPPS    $0x16, Z1, Z0, K2
	VMOVAPS.Z Z0, K2, Z2
	VMOVUPS   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $16, DX
	JMP       rfull

rtail:
	TESTQ     DX, DX
	JZ        rdone
	VMOVUPS.Z (SI), K1, Z0
	VCMPPS    $0x16, Z1, Z0, K2
	VMOVAPS.Z Z0, K2, Z2
	VMOVUPS   Z2, K1, (DI)

rdone:
	VZEROUPPER
	RET

// func reluBackwardAVX512(dx, dy, x *float32, n int)
// dx = dy where x > 0 (ordered: GT_OQ), +0 elsewhere.
TEXT ·reluBackwardAVX512(SB), NOSPLIT, $0-32
	MOVQ   dx+0(FP), DI
	MOVQ   dy+8(FP), R8
	MOVQ   x+16(FP), SI
	MOVQ   n+24(FP), DX
	TAILMASK(DX)
	VPXORD Z1, Z1, Z1

bfull:
	CMPQ      DX, $16
	JB        btail
	VMOVUPS   (SI), Z0
	VCMPPS    $0x1e, Z1, Z0, K2
	VMOVUPS.Z (R8), K2, Z2
	VMOVUPS   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $64, R8
	ADDQ      $64, DI
	SUBQ      $16, DX
	JMP       bfull

btail:
	TESTQ     DX, DX
	JZ        bdone
	VMOVUPS.Z (SI), K1, Z0
	VCMPPS    $0x1e, Z1, Z0, K2
	KANDW     K1, K2, K2
	VMOVUPS.Z (R8), K2, Z2
	VMOVUPS   Z2, K1, (DI)

bdone:
	VZEROUPPER
	RET

// func addScalarAVX512(x *float32, n int, v float32)
TEXT ·addScalarAVX512(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), DX
	TAILMASK(DX)
	VBROADCASTSS v+16(FP), Z1

sfull:
	CMPQ    DX, $16
	JB      stail
	VADDPS  (DI), Z1, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	SUBQ    $16, DX
	JMP     sfull

stail:
	TESTQ     DX, DX
	JZ        sdone
	VMOVUPS.Z (DI), K1, Z0
	VADDPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (DI)

sdone:
	VZEROUPPER
	RET

// Max pooling's backward pass over 2×2 windows at stride 2, 16 windows (32
// floats of each of the two input rows) at a time. VPERMT2PS gathers the
// windows' four corners A (row 0, even), B (row 0, odd), C (row 1, even),
// E (row 1, odd) from two registers; the first-maximum masks are
// ka = A==m, kb = B==m &^ ka, kc = C==m &^ (ka|kb), ke = the rest, and the
// gradient (a -0 made +0) goes out through them, interleaved back.
// Index tables for VPERMT2PS (lanes 0-15 of the first table, 16-31 of the
// second).
DATA pool2even<>+0(SB)/4, $0
DATA pool2even<>+4(SB)/4, $2
DATA pool2even<>+8(SB)/4, $4
DATA pool2even<>+12(SB)/4, $6
DATA pool2even<>+16(SB)/4, $8
DATA pool2even<>+20(SB)/4, $10
DATA pool2even<>+24(SB)/4, $12
DATA pool2even<>+28(SB)/4, $14
DATA pool2even<>+32(SB)/4, $16
DATA pool2even<>+36(SB)/4, $18
DATA pool2even<>+40(SB)/4, $20
DATA pool2even<>+44(SB)/4, $22
DATA pool2even<>+48(SB)/4, $24
DATA pool2even<>+52(SB)/4, $26
DATA pool2even<>+56(SB)/4, $28
DATA pool2even<>+60(SB)/4, $30
GLOBL pool2even<>(SB), RODATA|NOPTR, $64
DATA pool2odd<>+0(SB)/4, $1
DATA pool2odd<>+4(SB)/4, $3
DATA pool2odd<>+8(SB)/4, $5
DATA pool2odd<>+12(SB)/4, $7
DATA pool2odd<>+16(SB)/4, $9
DATA pool2odd<>+20(SB)/4, $11
DATA pool2odd<>+24(SB)/4, $13
DATA pool2odd<>+28(SB)/4, $15
DATA pool2odd<>+32(SB)/4, $17
DATA pool2odd<>+36(SB)/4, $19
DATA pool2odd<>+40(SB)/4, $21
DATA pool2odd<>+44(SB)/4, $23
DATA pool2odd<>+48(SB)/4, $25
DATA pool2odd<>+52(SB)/4, $27
DATA pool2odd<>+56(SB)/4, $29
DATA pool2odd<>+60(SB)/4, $31
GLOBL pool2odd<>(SB), RODATA|NOPTR, $64
DATA pool2lo<>+0(SB)/4, $0
DATA pool2lo<>+4(SB)/4, $16
DATA pool2lo<>+8(SB)/4, $1
DATA pool2lo<>+12(SB)/4, $17
DATA pool2lo<>+16(SB)/4, $2
DATA pool2lo<>+20(SB)/4, $18
DATA pool2lo<>+24(SB)/4, $3
DATA pool2lo<>+28(SB)/4, $19
DATA pool2lo<>+32(SB)/4, $4
DATA pool2lo<>+36(SB)/4, $20
DATA pool2lo<>+40(SB)/4, $5
DATA pool2lo<>+44(SB)/4, $21
DATA pool2lo<>+48(SB)/4, $6
DATA pool2lo<>+52(SB)/4, $22
DATA pool2lo<>+56(SB)/4, $7
DATA pool2lo<>+60(SB)/4, $23
GLOBL pool2lo<>(SB), RODATA|NOPTR, $64
DATA pool2hi<>+0(SB)/4, $8
DATA pool2hi<>+4(SB)/4, $24
DATA pool2hi<>+8(SB)/4, $9
DATA pool2hi<>+12(SB)/4, $25
DATA pool2hi<>+16(SB)/4, $10
DATA pool2hi<>+20(SB)/4, $26
DATA pool2hi<>+24(SB)/4, $11
DATA pool2hi<>+28(SB)/4, $27
DATA pool2hi<>+32(SB)/4, $12
DATA pool2hi<>+36(SB)/4, $28
DATA pool2hi<>+40(SB)/4, $13
DATA pool2hi<>+44(SB)/4, $29
DATA pool2hi<>+48(SB)/4, $14
DATA pool2hi<>+52(SB)/4, $30
DATA pool2hi<>+56(SB)/4, $15
DATA pool2hi<>+60(SB)/4, $31
GLOBL pool2hi<>(SB), RODATA|NOPTR, $64

#define POOL2BODY \
	VMOVAPS   Z0, Z4 \
	VPERMT2PS Z1, Z20, Z4 \
	VMOVAPS   Z0, Z5 \
	VPERMT2PS Z1, Z21, Z5 \
	VMOVAPS   Z2, Z6 \
	VPERMT2PS Z3, Z20, Z6 \
	VMOVAPS   Z2, Z7 \
	VPERMT2PS Z3, Z21, Z7 \
	VCMPPS    $3, Z5, Z4, K1 \
	VCMPPS    $3, Z7, Z6, K2 \
	KORTESTW  K2, K1 \
	JNE       pnan \
	VMAXPS    Z5, Z4, Z8 \
	VMAXPS    Z7, Z6, Z9 \
	VMAXPS    Z9, Z8, Z8 \
	VCMPPS    $0, Z8, Z4, K1 \
	VCMPPS    $0, Z8, Z5, K2 \
	KANDNW    K2, K1, K2 \
	VCMPPS    $0, Z8, Z6, K3 \
	KORW      K2, K1, K4 \
	KANDNW    K3, K4, K3 \
	KORW      K3, K4, K4 \
	KNOTW     K4, K4 \
	VADDPS    Z24, Z10, Z10 \
	VMOVAPS.Z Z10, K1, Z11 \
	VMOVAPS.Z Z10, K2, Z12 \
	VMOVAPS.Z Z10, K3, Z13 \
	VMOVAPS.Z Z10, K4, Z14 \
	VMOVAPS   Z11, Z15 \
	VPERMT2PS Z12, Z22, Z15 \
	VMOVAPS   Z11, Z16 \
	VPERMT2PS Z12, Z23, Z16 \
	VMOVAPS   Z13, Z17 \
	VPERMT2PS Z14, Z22, Z17 \
	VMOVAPS   Z13, Z18 \
	VPERMT2PS Z14, Z23, Z18

// func maxPool2BackwardAVX512(din, x, dy *float32, w, ow, oh int) bool
TEXT ·maxPool2BackwardAVX512(SB), NOSPLIT, $0-49
	VMOVUPS pool2even<>(SB), Z20
	VMOVUPS pool2odd<>(SB), Z21
	VMOVUPS pool2lo<>(SB), Z22
	VMOVUPS pool2hi<>(SB), Z23
	VPXORD  Z24, Z24, Z24
	MOVQ    din+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    dy+16(FP), R8
	MOVQ    w+24(FP), R9
	SHLQ    $2, R9
	MOVQ    ow+32(FP), R10
	MOVQ    oh+40(FP), R11

	// Tail masks for t = ow%16 windows: K7 t bits (dy), K5 and K6 the 2t
	// floats of an input row over its two registers.
	MOVQ  R10, CX
	ANDQ  $15, CX
	MOVL  $1, BX
	SHLL  CX, BX
	DECL  BX
	KMOVW BX, K7
	SHLQ  $1, CX
	CMPQ  CX, $16
	JB    plow
	MOVL  $0xffff, BX
	KMOVW BX, K5
	SUBQ  $16, CX
	MOVL  $1, BX
	SHLL  CX, BX
	DECL  BX
	KMOVW BX, K6
	JMP   prow

plow:
	MOVL  $1, BX
	SHLL  CX, BX
	DECL  BX
	KMOVW BX, K5
	KXORW K6, K6, K6

prow:
	MOVQ SI, R12
	MOVQ DI, AX
	MOVQ R8, BX
	MOVQ R10, DX

pchunk:
	CMPQ    DX, $16
	JB      ptail
	VMOVUPS (R12), Z0
	VMOVUPS 64(R12), Z1
	VMOVUPS (R12)(R9*1), Z2
	VMOVUPS 64(R12)(R9*1), Z3
	VMOVUPS (BX), Z10
	POOL2BODY
	VMOVUPS Z15, (AX)
	VMOVUPS Z16, 64(AX)
	VMOVUPS Z17, (AX)(R9*1)
	VMOVUPS Z18, 64(AX)(R9*1)
	ADDQ    $128, R12
	ADDQ    $128, AX
	ADDQ    $64, BX
	SUBQ    $16, DX
	JMP     pchunk

ptail:
	TESTQ     DX, DX
	JZ        pnext
	VMOVUPS.Z (R12), K5, Z0
	VMOVUPS.Z 64(R12), K6, Z1
	VMOVUPS.Z (R12)(R9*1), K5, Z2
	VMOVUPS.Z 64(R12)(R9*1), K6, Z3
	VMOVUPS.Z (BX), K7, Z10
	POOL2BODY
	VMOVUPS   Z15, K5, (AX)
	VMOVUPS   Z16, K6, 64(AX)
	VMOVUPS   Z17, K5, (AX)(R9*1)
	VMOVUPS   Z18, K6, 64(AX)(R9*1)

pnext:
	LEAQ (SI)(R9*2), SI
	LEAQ (DI)(R9*2), DI
	LEAQ (R8)(R10*4), R8
	DECQ R11
	JNZ  prow
	VZEROUPPER
	MOVB $1, ret+48(FP)
	RET

pnan:
	VZEROUPPER
	MOVB $0, ret+48(FP)
	RET

// func zeroRowsAVX512(dst *float32, ldd int, rows, n int)
TEXT ·zeroRowsAVX512(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DI
	MOVQ   ldd+8(FP), R8
	SHLQ   $2, R8
	MOVQ   n+24(FP), DX
	TAILMASK(DX)
	MOVQ   rows+16(FP), CX
	VPXORD Z0, Z0, Z0

zrow:
	MOVQ DX, R10
	MOVQ DI, R11

zfull:
	CMPQ    R10, $16
	JB      ztail
	VMOVUPS Z0, (R11)
	ADDQ    $64, R11
	SUBQ    $16, R10
	JMP     zfull

ztail:
	TESTQ   R10, R10
	JZ      znext
	VMOVUPS Z0, K1, (R11)

znext:
	ADDQ R8, DI
	DECQ CX
	JNZ  zrow
	VZEROUPPER
	RET

// func sumAVX512(s *float32, n int) float32
// Sixteen lanes from +0, the tail added through a zeroing mask (+0 leaves
// a lane unchanged: a lane that starts at +0 is never -0), then lanes j and
// j+8, j+4, j+2, j+1 added pairwise: sumGo's order.
TEXT ·sumAVX512(SB), NOSPLIT, $0-20
	MOVQ   s+0(FP), SI
	MOVQ   n+8(FP), DX
	TAILMASK(DX)
	VPXORD Z0, Z0, Z0

ufull:
	CMPQ   DX, $16
	JB     utail
	VADDPS (SI), Z0, Z0
	ADDQ   $64, SI
	SUBQ   $16, DX
	JMP    ufull

utail:
	TESTQ     DX, DX
	JZ        ureduce
	VMOVUPS.Z (SI), K1, Z1
	VADDPS    Z1, Z0, Z0

ureduce:
	VEXTRACTF32X8 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VMOVHLPS      X0, X0, X1
	VADDPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VADDSS        X1, X0, X0
	VMOVSS        X0, ret+16(FP)
	VZEROUPPER
	RET

// func transpose8AVX512(dst *float32, ldd int, src *float32, lds int, k int)
// k a multiple of 16. Per 16 columns: eight rows loaded, transposed as two
// 8×8 blocks at once (VUNPCKLPS/HPS and VSHUFPS work within 128-bit lanes;
// VSHUFF32X4 joins lane L of u_i and u_i+4 into output rows), sixteen rows
// of eight stored.
TEXT ·transpose8AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ k+32(FP), DX
	LEAQ (R9)(R9*2), R10     // 3·lds
	LEAQ (R8)(R8*2), R11     // 3·ldd

tloop:
	TESTQ DX, DX
	JZ    tdone
	MOVQ  SI, AX
	VMOVUPS (AX), Z0
	VMOVUPS (AX)(R9*1), Z1
	VMOVUPS (AX)(R9*2), Z2
	VMOVUPS (AX)(R10*1), Z3
	LEAQ    (AX)(R9*4), AX
	VMOVUPS (AX), Z4
	VMOVUPS (AX)(R9*1), Z5
	VMOVUPS (AX)(R9*2), Z6
	VMOVUPS (AX)(R10*1), Z7

	// t: pairs of rows interleaved within 128-bit lanes.
	VUNPCKLPS Z1, Z0, Z8
	VUNPCKHPS Z1, Z0, Z9
	VUNPCKLPS Z3, Z2, Z10
	VUNPCKHPS Z3, Z2, Z11
	VUNPCKLPS Z5, Z4, Z12
	VUNPCKHPS Z5, Z4, Z13
	VUNPCKLPS Z7, Z6, Z14
	VUNPCKHPS Z7, Z6, Z15

	// u_k: lane L holds rows 0-3 (k < 4) or 4-7 of column 4L+k.
	VSHUFPS $0x44, Z10, Z8, Z16
	VSHUFPS $0xee, Z10, Z8, Z17
	VSHUFPS $0x44, Z11, Z9, Z18
	VSHUFPS $0xee, Z11, Z9, Z19
	VSHUFPS $0x44, Z14, Z12, Z20
	VSHUFPS $0xee, Z14, Z12, Z21
	VSHUFPS $0x44, Z15, Z13, Z22
	VSHUFPS $0xee, Z15, Z13, Z23

	// Output rows: [u_k.L, u_k+4.L] for column 4L+k. VSHUFF32X4 $0x44
	// takes lanes 0,1 of the first and 0,1 of the second source: with
	// sources u_k and u_k+4 that is [u_k.0 u_k.1 u_k+4.0 u_k+4.1]; a
	// VPERMQ-free fix-up orders them [u_k.0 u_k+4.0 u_k.1 u_k+4.1] through
	// a second VSHUFF32X4 of the result with itself ($0xd8: lanes 0,2,1,3).
	VSHUFF32X4 $0x44, Z20, Z16, Z24
	VSHUFF32X4 $0xd8, Z24, Z24, Z24
	VSHUFF32X4 $0xee, Z20, Z16, Z25
	VSHUFF32X4 $0xd8, Z25, Z25, Z25
	VSHUFF32X4 $0x44, Z21, Z17, Z26
	VSHUFF32X4 $0xd8, Z26, Z26, Z26
	VSHUFF32X4 $0xee, Z21, Z17, Z27
	VSHUFF32X4 $0xd8, Z27, Z27, Z27
	VSHUFF32X4 $0x44, Z22, Z18, Z28
	VSHUFF32X4 $0xd8, Z28, Z28, Z28
	VSHUFF32X4 $0xee, Z22, Z18, Z29
	VSHUFF32X4 $0xd8, Z29, Z29, Z29
	VSHUFF32X4 $0x44, Z23, Z19, Z30
	VSHUFF32X4 $0xd8, Z30, Z30, Z30
	VSHUFF32X4 $0xee, Z23, Z19, Z31
	VSHUFF32X4 $0xd8, Z31, Z31, Z31

	// Z24 holds columns 0 (low half) and 4; Z25 8 and 12; Z26 1 and 5;
	// Z27 9 and 13; Z28 2 and 6; Z29 10 and 14; Z30 3 and 7; Z31 11 and 15.
	MOVQ          DI, BX
	VMOVUPS       Y24, (BX)
	VMOVUPS       Y26, (BX)(R8*1)
	VMOVUPS       Y28, (BX)(R8*2)
	VMOVUPS       Y30, (BX)(R11*1)
	LEAQ          (BX)(R8*4), BX
	VEXTRACTF32X8 $1, Z24, (BX)
	VEXTRACTF32X8 $1, Z26, (BX)(R8*1)
	VEXTRACTF32X8 $1, Z28, (BX)(R8*2)
	VEXTRACTF32X8 $1, Z30, (BX)(R11*1)
	LEAQ          (BX)(R8*4), BX
	VMOVUPS       Y25, (BX)
	VMOVUPS       Y27, (BX)(R8*1)
	VMOVUPS       Y29, (BX)(R8*2)
	VMOVUPS       Y31, (BX)(R11*1)
	LEAQ          (BX)(R8*4), BX
	VEXTRACTF32X8 $1, Z25, (BX)
	VEXTRACTF32X8 $1, Z27, (BX)(R8*1)
	VEXTRACTF32X8 $1, Z29, (BX)(R8*2)
	VEXTRACTF32X8 $1, Z31, (BX)(R11*1)

	ADDQ $64, SI
	LEAQ (BX)(R8*4), DI
	SUBQ $16, DX
	JMP  tloop

tdone:
	VZEROUPPER
	RET
