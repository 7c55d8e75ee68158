//go:build !purego

#include "textflag.h"

// The AVX2 forms of vec.go's loops, 8 floats a vector, 32 an iteration
// where the loop allows. n is a multiple of 8 (the Go side does the rest).
// Every result is the same IEEE operation, rounded once, as the Go loop
// computes for each element: only the number done at a time differs.

DATA ones<>+0(SB)/4, $1.0
GLOBL ones<>(SB), RODATA|NOPTR, $4

DATA bitsel<>+0(SB)/4, $1
DATA bitsel<>+4(SB)/4, $2
DATA bitsel<>+8(SB)/4, $4
DATA bitsel<>+12(SB)/4, $8
DATA bitsel<>+16(SB)/4, $16
DATA bitsel<>+20(SB)/4, $32
DATA bitsel<>+24(SB)/4, $64
DATA bitsel<>+28(SB)/4, $128
GLOBL bitsel<>(SB), RODATA|NOPTR, $32

// func reluMaskAVX2(x, out *float32, bits *byte, n int)
// out = x·[x ≥ 0]; bits[i/8] bit i%8 = [x_i ≥ 0].
TEXT ·reluMaskAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ bits+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   done
	VBROADCASTSS ones<>(SB), Y15
	VXORPS Y14, Y14, Y14

loop:
	VMOVUPS (SI), Y0
	VCMPPS $0x1d, Y14, Y0, Y1 // x ≥ 0, ordered: false for NaN
	VMOVMSKPS Y1, AX
	MOVB AL, (DX)
	VANDPS Y15, Y1, Y1
	VMULPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	INCQ DX
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET

// func maskMulAVX2(grad *float32, bits *byte, out *float32, n int)
// out = grad·[bit set].
TEXT ·maskMulAVX2(SB), NOSPLIT, $0-32
	MOVQ grad+0(FP), SI
	MOVQ bits+8(FP), DX
	MOVQ out+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   done
	VBROADCASTSS ones<>(SB), Y15
	VMOVDQU bitsel<>(SB), Y14

loop:
	MOVBLZX (DX), AX
	VMOVD AX, X1
	VPBROADCASTD X1, Y1
	VPAND Y14, Y1, Y1
	VPCMPEQD Y14, Y1, Y1 // lane i: all ones when bit i is set
	VANDPS Y15, Y1, Y1
	VMULPS (SI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	INCQ DX
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET

// func addAVX2(a, b, out *float32, n int)
// out = a + b.
TEXT ·addAVX2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ out+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   done

loop4:
	CMPQ CX, $4
	JB   loop1
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS (BX), Y0, Y0
	VADDPS 32(BX), Y1, Y1
	VADDPS 64(BX), Y2, Y2
	VADDPS 96(BX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, BX
	ADDQ $128, DI
	SUBQ $4, CX
	JMP  loop4

loop1:
	TESTQ CX, CX
	JZ    end
	VMOVUPS (SI), Y0
	VADDPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JMP  loop1

end:
	VZEROUPPER

done:
	RET

// func mulAddAVX2(y, z, out *float32, s float32, n int)
// out = y + z·s, the product rounded before the sum (no fused multiply-add).
TEXT ·mulAddAVX2(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), SI
	MOVQ z+8(FP), BX
	MOVQ out+16(FP), DI
	VBROADCASTSS s+24(FP), Y15
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VMULPS (BX), Y15, Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET

// func scaleAVX2(x, out *float32, s float32, n int)
// out = x·s.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ out+8(FP), DI
	VBROADCASTSS s+16(FP), Y15
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VMULPS (SI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET

// func productAVX2(x, out *float32, s float32, n int)
// out = fma(x, s, +0): the product rounded once, as a chain of fused
// multiply-adds from +0 computes it (a product too small for a float
// rounds to a zero of its sign). Needs FMA as well as AVX2.
TEXT ·productAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ out+8(FP), DI
	VBROADCASTSS s+16(FP), Y15
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VXORPS Y0, Y0, Y0
	VFMADD231PS (SI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET

// The constants of github.com/chewxy/math32's Exp (exp_amd64.s), as float32.
DATA expc<>+0(SB)/4, $1.44269502162933349609375   // log2(e)
DATA expc<>+4(SB)/4, $0.693145751953125           // ln 2, upper part
DATA expc<>+8(SB)/4, $1.428606765330187045e-06    // ln 2, lower part
DATA expc<>+12(SB)/4, $0.0625
DATA expc<>+16(SB)/4, $0.00836596917361021041870117 // T4
DATA expc<>+20(SB)/4, $0.0416710823774337768554688  // T3
DATA expc<>+24(SB)/4, $0.166665524244308471679688   // T2
DATA expc<>+28(SB)/4, $0.5                          // T1
DATA expc<>+32(SB)/4, $1.0                          // T0
DATA expc<>+36(SB)/4, $2.0
DATA expc<>+40(SB)/4, $0x7fffffff                   // |x|
DATA expc<>+44(SB)/4, $0x7f800000                   // +Inf
DATA expc<>+48(SB)/4, $0xff800000                   // −Inf
DATA expc<>+52(SB)/4, $127
DATA expc<>+56(SB)/4, $255
GLOBL expc<>(SB), RODATA|NOPTR, $60

// func expAVX2(x, out *float32, n int)
// out = math32.Exp(x), 8 at a time: math32's instructions in packed form,
// in its order, with its special cases (±Inf, NaN, an exponent out of
// range, which includes an x whose log2 overflows an int32) blended in.
TEXT ·expAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done
	VBROADCASTSS expc<>+36(SB), Y15 // 2
	VBROADCASTSS expc<>+32(SB), Y14 // 1 (T0)
	VPBROADCASTD expc<>+44(SB), Y13 // +Inf
	VPBROADCASTD expc<>+52(SB), Y12 // 127
	VPBROADCASTD expc<>+56(SB), Y11 // 255

loop:
	VMOVUPS (SI), Y0 // x
	VBROADCASTSS expc<>+0(SB), Y1
	VMULPS Y0, Y1, Y1 // x·log2(e)
	VCVTPS2DQ Y1, Y10 // e = round(x·log2(e))
	VCVTDQ2PS Y10, Y1 // float(e)
	VBROADCASTSS expc<>+4(SB), Y2
	VMULPS Y1, Y2, Y2
	VSUBPS Y2, Y0, Y3 // x − e·ln2u
	VBROADCASTSS expc<>+8(SB), Y2
	VMULPS Y1, Y2, Y2
	VSUBPS Y2, Y3, Y3 // − e·ln2l
	VBROADCASTSS expc<>+12(SB), Y2
	VMULPS Y2, Y3, Y3 // r = ·1/16
	VBROADCASTSS expc<>+16(SB), Y2
	VADDPS Y2, Y1, Y1 // float(e) + T4, as math32 starts its series
	VMULPS Y3, Y1, Y1
	VBROADCASTSS expc<>+20(SB), Y2
	VADDPS Y2, Y1, Y1
	VMULPS Y3, Y1, Y1
	VBROADCASTSS expc<>+24(SB), Y2
	VADDPS Y2, Y1, Y1
	VMULPS Y3, Y1, Y1
	VBROADCASTSS expc<>+28(SB), Y2
	VADDPS Y2, Y1, Y1
	VMULPS Y3, Y1, Y1
	VADDPS Y14, Y1, Y1
	VMULPS Y1, Y3, Y3 // r·series
	VADDPS Y3, Y15, Y1
	VMULPS Y1, Y3, Y3 // r·(2 + r), four times
	VADDPS Y3, Y15, Y1
	VMULPS Y1, Y3, Y3
	VADDPS Y3, Y15, Y1
	VMULPS Y1, Y3, Y3
	VADDPS Y3, Y15, Y1
	VMULPS Y1, Y3, Y3
	VADDPS Y14, Y3, Y3 // + 1
	VPADDD Y12, Y10, Y10 // e + 127
	VPSLLD $23, Y10, Y4
	VMULPS Y4, Y3, Y3 // · 2^e
	// e + 127 ≤ 0: 0; ≥ 255: +Inf.
	VPXOR Y5, Y5, Y5
	VPCMPGTD Y5, Y10, Y6 // e + 127 > 0
	VPAND Y6, Y3, Y3
	VPCMPGTD Y10, Y11, Y6 // 255 > e + 127
	VPAND Y6, Y3, Y3
	VPANDN Y13, Y6, Y7 // +Inf where e + 127 ≥ 255
	VPOR Y7, Y3, Y3
	// Not finite (|x| ≥ +Inf as bits): x, or 0 for −Inf.
	VPBROADCASTD expc<>+40(SB), Y7
	VPAND Y7, Y0, Y7 // |x|
	VPCMPGTD Y7, Y13, Y6 // finite: Inf > |x|
	VPBROADCASTD expc<>+48(SB), Y8
	VPCMPEQD Y8, Y0, Y8 // x = −Inf
	VPANDN Y0, Y8, Y9 // x, 0 for −Inf
	VPAND Y6, Y3, Y3
	VPANDN Y9, Y6, Y9
	VPOR Y9, Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET
