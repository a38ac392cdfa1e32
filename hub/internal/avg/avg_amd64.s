//go:build !purego

#include "textflag.h"

// The loops run several vectors at a time and finish with one masked load
// and store; K1 holds the tail's mask. Masked-off lanes are neither read
// (no fault past the slice) nor written.

// MASK sets K1 to the low (reg & m) bits; clobbers CX and BX.
#define MASK(reg, m) \
	MOVQ  reg, CX \
	ANDQ  $m, CX  \
	MOVL  $1, BX  \
	SHLL  CX, BX  \
	DECL  BX      \
	KMOVW BX, K1

// func firstNonFiniteAVX512(src *float32, n int) int
//
// Tests 64 floats a round, their exponent fields against all ones (NaN
// and ±Inf); at the first round with a hit it finds the hit's index.
TEXT ·firstNonFiniteAVX512(SB), NOSPLIT, $0-24
	MOVQ         src+0(FP), SI
	MOVQ         n+8(FP), DX
	XORQ         R8, R8                // index of the current round's first float
	MOVL         $0x7f800000, AX
	VPBROADCASTD AX, Z7

nf64:
	CMPQ     DX, $64
	JB       nf16
	VPANDD   (SI), Z7, Z0
	VPANDD   64(SI), Z7, Z1
	VPANDD   128(SI), Z7, Z2
	VPANDD   192(SI), Z7, Z3
	VPCMPEQD Z7, Z0, K2
	VPCMPEQD Z7, Z1, K3
	VPCMPEQD Z7, Z2, K4
	VPCMPEQD Z7, Z3, K5
	KORW     K2, K3, K6
	KORW     K4, K5, K7
	KORTESTW K6, K7
	JNZ      nfbad64
	ADDQ     $256, SI
	ADDQ     $64, R8
	SUBQ     $64, DX
	JMP      nf64

nfbad64:
	// Which of the four vectors: the first with a hit.
	KMOVW K2, AX
	TESTL AX, AX
	JNZ   nffound
	ADDQ  $16, R8
	KMOVW K3, AX
	TESTL AX, AX
	JNZ   nffound
	ADDQ  $16, R8
	KMOVW K4, AX
	TESTL AX, AX
	JNZ   nffound
	ADDQ  $16, R8
	KMOVW K5, AX
	JMP   nffound

nf16:
	CMPQ     DX, $16
	JB       nftail
	VPANDD   (SI), Z7, Z0
	VPCMPEQD Z7, Z0, K2
	KORTESTW K2, K2
	JNZ      nfbad16
	ADDQ     $64, SI
	ADDQ     $16, R8
	SUBQ     $16, DX
	JMP      nf16

nftail:
	TESTQ     DX, DX
	JZ        nfnone
	MASK(DX, 15)
	VMOVUPS.Z (SI), K1, Z0   // masked-off lanes read as +0: finite
	VPANDD    Z7, Z0, Z0
	VPCMPEQD  Z7, Z0, K2
	KORTESTW  K2, K2
	JNZ       nfbad16

nfnone:
	MOVQ $-1, ret+16(FP)
	VZEROUPPER
	RET

nfbad16:
	KMOVW K2, AX

nffound:
	BSFL AX, AX
	ADDQ R8, AX
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

// func addScaledAVX512(acc *float64, w float64, src *float32, n int)
//
// acc += w·src, 32 values a round: each 8 floats widened to doubles and
// multiplied-added into acc with one fused multiply-add.
TEXT ·addScaledAVX512(SB), NOSPLIT, $0-32
	MOVQ         acc+0(FP), DI
	VBROADCASTSD w+8(FP), Z7
	MOVQ         src+16(FP), SI
	MOVQ         n+24(FP), DX

as32:
	CMPQ        DX, $32
	JB          as8
	VCVTPS2PD   (SI), Z0
	VCVTPS2PD   32(SI), Z1
	VCVTPS2PD   64(SI), Z2
	VCVTPS2PD   96(SI), Z3
	VFMADD213PD (DI), Z7, Z0         // Z0 = w·Z0 + acc
	VFMADD213PD 64(DI), Z7, Z1
	VFMADD213PD 128(DI), Z7, Z2
	VFMADD213PD 192(DI), Z7, Z3
	VMOVUPD     Z0, (DI)
	VMOVUPD     Z1, 64(DI)
	VMOVUPD     Z2, 128(DI)
	VMOVUPD     Z3, 192(DI)
	ADDQ        $128, SI
	ADDQ        $256, DI
	SUBQ        $32, DX
	JMP         as32

as8:
	CMPQ        DX, $8
	JB          astail
	VCVTPS2PD   (SI), Z0
	VFMADD213PD (DI), Z7, Z0
	VMOVUPD     Z0, (DI)
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $8, DX
	JMP         as8

astail:
	TESTQ         DX, DX
	JZ            asdone
	MASK(DX, 7)
	VCVTPS2PD.Z   (SI), K1, Z0
	VMOVUPD.Z     (DI), K1, Z1
	VFMADD231PD   Z0, Z7, Z1         // Z1 = w·Z0 + Z1
	VMOVUPD       Z1, K1, (DI)

asdone:
	VZEROUPPER
	RET

// func addScaled4AVX512(acc *float64, w *[4]float64, src *[4]*float32, n int)
//
// acc += w0·s0, then w1·s1, w2·s2, w3·s3: 32 values a round in four
// independent accumulators (Z0-Z3), each taking its four fused
// multiply-adds in source order. SI is the byte offset into the sources.
TEXT ·addScaled4AVX512(SB), NOSPLIT, $0-32
	MOVQ         acc+0(FP), DI
	MOVQ         w+8(FP), AX
	VBROADCASTSD 0(AX), Z4
	VBROADCASTSD 8(AX), Z5
	VBROADCASTSD 16(AX), Z6
	VBROADCASTSD 24(AX), Z7
	MOVQ         src+16(FP), AX
	MOVQ         0(AX), R8
	MOVQ         8(AX), R9
	MOVQ         16(AX), R10
	MOVQ         24(AX), R11
	MOVQ         n+24(FP), DX
	XORQ         SI, SI

a4r32:
	CMPQ        DX, $32
	JB          a4r8
	VMOVUPD     (DI), Z0
	VMOVUPD     64(DI), Z1
	VMOVUPD     128(DI), Z2
	VMOVUPD     192(DI), Z3
	VCVTPS2PD   (R8)(SI*1), Z8
	VCVTPS2PD   32(R8)(SI*1), Z9
	VCVTPS2PD   64(R8)(SI*1), Z10
	VCVTPS2PD   96(R8)(SI*1), Z11
	VFMADD231PD Z8, Z4, Z0
	VFMADD231PD Z9, Z4, Z1
	VFMADD231PD Z10, Z4, Z2
	VFMADD231PD Z11, Z4, Z3
	VCVTPS2PD   (R9)(SI*1), Z8
	VCVTPS2PD   32(R9)(SI*1), Z9
	VCVTPS2PD   64(R9)(SI*1), Z10
	VCVTPS2PD   96(R9)(SI*1), Z11
	VFMADD231PD Z8, Z5, Z0
	VFMADD231PD Z9, Z5, Z1
	VFMADD231PD Z10, Z5, Z2
	VFMADD231PD Z11, Z5, Z3
	VCVTPS2PD   (R10)(SI*1), Z8
	VCVTPS2PD   32(R10)(SI*1), Z9
	VCVTPS2PD   64(R10)(SI*1), Z10
	VCVTPS2PD   96(R10)(SI*1), Z11
	VFMADD231PD Z8, Z6, Z0
	VFMADD231PD Z9, Z6, Z1
	VFMADD231PD Z10, Z6, Z2
	VFMADD231PD Z11, Z6, Z3
	VCVTPS2PD   (R11)(SI*1), Z8
	VCVTPS2PD   32(R11)(SI*1), Z9
	VCVTPS2PD   64(R11)(SI*1), Z10
	VCVTPS2PD   96(R11)(SI*1), Z11
	VFMADD231PD Z8, Z7, Z0
	VFMADD231PD Z9, Z7, Z1
	VFMADD231PD Z10, Z7, Z2
	VFMADD231PD Z11, Z7, Z3
	VMOVUPD     Z0, (DI)
	VMOVUPD     Z1, 64(DI)
	VMOVUPD     Z2, 128(DI)
	VMOVUPD     Z3, 192(DI)
	ADDQ        $128, SI
	ADDQ        $256, DI
	SUBQ        $32, DX
	JMP         a4r32

a4r8:
	CMPQ        DX, $8
	JB          a4tail
	VMOVUPD     (DI), Z0
	VCVTPS2PD   (R8)(SI*1), Z8
	VFMADD231PD Z8, Z4, Z0
	VCVTPS2PD   (R9)(SI*1), Z8
	VFMADD231PD Z8, Z5, Z0
	VCVTPS2PD   (R10)(SI*1), Z8
	VFMADD231PD Z8, Z6, Z0
	VCVTPS2PD   (R11)(SI*1), Z8
	VFMADD231PD Z8, Z7, Z0
	VMOVUPD     Z0, (DI)
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $8, DX
	JMP         a4r8

a4tail:
	TESTQ       DX, DX
	JZ          a4done
	MASK(DX, 7)
	VMOVUPD.Z   (DI), K1, Z0
	VCVTPS2PD.Z (R8)(SI*1), K1, Z8
	VFMADD231PD Z8, Z4, Z0
	VCVTPS2PD.Z (R9)(SI*1), K1, Z8
	VFMADD231PD Z8, Z5, Z0
	VCVTPS2PD.Z (R10)(SI*1), K1, Z8
	VFMADD231PD Z8, Z6, Z0
	VCVTPS2PD.Z (R11)(SI*1), K1, Z8
	VFMADD231PD Z8, Z7, Z0
	VMOVUPD     Z0, K1, (DI)

a4done:
	VZEROUPPER
	RET

// func meanAVX512(dst *float32, acc *float64, n float64, count int)
//
// dst = float32(acc / n), 16 values a round: a correctly rounded division
// and a conversion in the default rounding mode, as Go's scalar code does.
TEXT ·meanAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         acc+8(FP), SI
	VBROADCASTSD n+16(FP), Z7
	MOVQ         count+24(FP), DX

mn16:
	CMPQ      DX, $16
	JB        mn8
	VMOVUPD   (SI), Z0
	VMOVUPD   64(SI), Z1
	VDIVPD    Z7, Z0, Z0
	VDIVPD    Z7, Z1, Z1
	VCVTPD2PS Z0, Y0
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $128, SI
	ADDQ      $64, DI
	SUBQ      $16, DX
	JMP       mn16

mn8:
	CMPQ      DX, $8
	JB        mntail
	VMOVUPD   (SI), Z0
	VDIVPD    Z7, Z0, Z0
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $8, DX

mntail:
	TESTQ     DX, DX
	JZ        mndone
	MASK(DX, 7)
	VMOVUPD.Z (SI), K1, Z0
	VDIVPD    Z7, Z0, Z0
	VCVTPD2PS Z0, Y0                 // zeroes the upper half of Z0
	VMOVUPS   Z0, K1, (DI)           // a 512-bit store masked to the tail: AVX512F alone

mndone:
	VZEROUPPER
	RET
