//go:build !purego

#include "textflag.h"

// func adamUpdateAVX2(c *adamCoef, grad, data, m, v, nd, nm, nv *float32, n int) bool
//
// adamUpdate for n values (a multiple of 4), four at a time in float64
// lanes: each lane the same operations, each rounded on its own, in the
// same order as the Go loop. Returns whether every result is finite.
TEXT ·adamUpdateAVX2(SB), NOSPLIT, $0-73
	MOVQ c+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ data+16(FP), BX
	MOVQ m+24(FP), R8
	MOVQ v+32(FP), R9
	MOVQ nd+40(FP), R10
	MOVQ nm+48(FP), R11
	MOVQ nv+56(FP), R12
	MOVQ n+64(FP), CX
	MOVQ 72(DI), R13 // decay
	VBROADCASTSD 0(DI), Y15 // scale
	VBROADCASTSD 8(DI), Y14 // β1
	VBROADCASTSD 16(DI), Y13 // 1 − β1
	VBROADCASTSD 24(DI), Y12 // β2
	VBROADCASTSD 32(DI), Y11 // 1 − β2
	VBROADCASTSD 40(DI), Y10 // c2
	VBROADCASTSD 48(DI), Y9 // stepSize
	VBROADCASTSD 56(DI), Y8 // ε
	VBROADCASTSD 64(DI), Y7 // lr·λ
	MOVL $0x7f800000, AX // the exponent bits: all set for ±Inf and NaN
	VMOVD AX, X5
	VPBROADCASTD X5, X5
	VPXOR X6, X6, X6 // lanes that were not finite
	SHRQ $2, CX
	JZ   done

loop:
	VCVTPS2PD (SI), Y0
	VMULPD Y15, Y0, Y0 // g = grad·scale
	VCVTPS2PD (R8), Y1
	VMULPD Y14, Y1, Y1 // β1·m
	VMULPD Y13, Y0, Y2 // (1−β1)·g
	VADDPD Y2, Y1, Y1 // m'
	VCVTPS2PD (R9), Y2
	VMULPD Y12, Y2, Y2 // β2·v
	VMULPD Y11, Y0, Y3 // (1−β2)·g
	VMULPD Y0, Y3, Y3 // ((1−β2)·g)·g
	VADDPD Y3, Y2, Y2 // v'
	VCVTPD2PSY Y1, X3
	VMOVUPS X3, (R11)
	VPAND X5, X3, X3
	VPCMPEQD X5, X3, X3
	VPOR X3, X6, X6
	VCVTPD2PSY Y2, X4
	VMOVUPS X4, (R12)
	VPAND X5, X4, X4
	VPCMPEQD X5, X4, X4
	VPOR X4, X6, X6
	VDIVPD Y10, Y2, Y2 // v'/c2
	VSQRTPD Y2, Y2
	VADDPD Y8, Y2, Y2 // √(v'/c2) + ε
	VMULPD Y9, Y1, Y1 // stepSize·m'
	VDIVPD Y2, Y1, Y1 // the update
	TESTQ R13, R13
	JZ    nodecay
	VCVTPS2PD (BX), Y2
	VMULPD Y7, Y2, Y2 // lr·λ·θ
	VADDPD Y2, Y1, Y1

nodecay:
	VCVTPD2PSY Y1, X1
	VMOVUPS (BX), X2
	VSUBPS X1, X2, X2 // θ − float32(update)
	VMOVUPS X2, (R10)
	VPAND X5, X2, X2
	VPCMPEQD X5, X2, X2
	VPOR X2, X6, X6
	ADDQ $16, SI
	ADDQ $16, BX
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $16, R10
	ADDQ $16, R11
	ADDQ $16, R12
	DECQ CX
	JNZ  loop

done:
	VPTEST X6, X6
	SETEQ ret+72(FP)
	VZEROUPPER
	RET
