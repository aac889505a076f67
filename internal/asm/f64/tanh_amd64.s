//go:build !purego

#include "textflag.h"

// Constants of tanhAVX2: masks, exp range reduction (ln2 split as in
// math.Exp), 1/n! for n = 13..0, and the rational approximation of
// math.Tanh for |x| < 0.625.
DATA ·tanhc+0(SB)/8, $0x7fffffffffffffff // absmask
DATA ·tanhc+8(SB)/8, $0x8000000000000000 // signmask
DATA ·tanhc+16(SB)/8, $0xc000000000000000 // m2
DATA ·tanhc+24(SB)/8, $0xc044000000000000 // ymin
DATA ·tanhc+32(SB)/8, $0x3ff71547652b82fe // log2e
DATA ·tanhc+40(SB)/8, $0x3fe62e42fee00000 // ln2hi
DATA ·tanhc+48(SB)/8, $0x3dea39ef35793c76 // ln2lo
DATA ·tanhc+56(SB)/8, $0x3ff0000000000000 // one
DATA ·tanhc+64(SB)/8, $0x00000000000003ff // bias
DATA ·tanhc+72(SB)/8, $0x3fe4000000000000 // thr
DATA ·tanhc+80(SB)/8, $0xbfeedc5baafd6f4b // p0
DATA ·tanhc+88(SB)/8, $0xc058d26a0e26682d // p1
DATA ·tanhc+96(SB)/8, $0xc0993ac030580563 // p2
DATA ·tanhc+104(SB)/8, $0x405c33f28a581b86 // q0
DATA ·tanhc+112(SB)/8, $0x40a176fa0e5535fa // q1
DATA ·tanhc+120(SB)/8, $0x40b2ec102442040c // q2
DATA ·tanhc+128(SB)/8, $0x3de6124613a86d09 // c13
DATA ·tanhc+136(SB)/8, $0x3e21eed8eff8d898 // c12
DATA ·tanhc+144(SB)/8, $0x3e5ae64567f544e4 // c11
DATA ·tanhc+152(SB)/8, $0x3e927e4fb7789f5c // c10
DATA ·tanhc+160(SB)/8, $0x3ec71de3a556c734 // c9
DATA ·tanhc+168(SB)/8, $0x3efa01a01a01a01a // c8
DATA ·tanhc+176(SB)/8, $0x3f2a01a01a01a01a // c7
DATA ·tanhc+184(SB)/8, $0x3f56c16c16c16c17 // c6
DATA ·tanhc+192(SB)/8, $0x3f81111111111111 // c5
DATA ·tanhc+200(SB)/8, $0x3fa5555555555555 // c4
DATA ·tanhc+208(SB)/8, $0x3fc5555555555555 // c3
DATA ·tanhc+216(SB)/8, $0x3fe0000000000000 // c2
DATA ·tanhc+224(SB)/8, $0x3ff0000000000000 // c1
DATA ·tanhc+232(SB)/8, $0x3ff0000000000000 // c0
GLOBL ·tanhc(SB), RODATA|NOPTR, $240

// func tanhAVX2(dst, src []float64)
//
// dst[i] = tanh(src[i]) for i < len(src) rounded down to a multiple of 4,
// four at a time, by math.Tanh's method: for |x| < 0.625 the rational
// approximation x + x s P(s)/Q(s) with s = x*x; otherwise sign(x) (1-e)/(1+e)
// with e = exp(-2|x|) from range reduction and a degree-13 polynomial
// (arguments below -40 are clamped: the result is then ±1 to the last bit).
TEXT ·tanhAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $2, CX
	JZ   done

loop:
	VMOVUPD (SI), Y0
	VBROADCASTSD ·tanhc+0(SB), Y15 // absmask
	VANDPD Y15, Y0, Y1
	VBROADCASTSD ·tanhc+16(SB), Y2 // m2
	VMULPD Y2, Y1, Y2
	VBROADCASTSD ·tanhc+24(SB), Y3 // ymin
	VMAXPD Y2, Y3, Y2
	VBROADCASTSD ·tanhc+32(SB), Y3 // log2e
	VMULPD Y3, Y2, Y3
	VROUNDPD $0, Y3, Y3
	VMOVAPD Y2, Y4
	VBROADCASTSD ·tanhc+40(SB), Y5 // ln2hi
	VFNMADD231PD Y5, Y3, Y4
	VBROADCASTSD ·tanhc+48(SB), Y5 // ln2lo
	VFNMADD231PD Y5, Y3, Y4
	VBROADCASTSD ·tanhc+128(SB), Y6 // c13
	VBROADCASTSD ·tanhc+136(SB), Y5 // c12
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+144(SB), Y5 // c11
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+152(SB), Y5 // c10
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+160(SB), Y5 // c9
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+168(SB), Y5 // c8
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+176(SB), Y5 // c7
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+184(SB), Y5 // c6
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+192(SB), Y5 // c5
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+200(SB), Y5 // c4
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+208(SB), Y5 // c3
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+216(SB), Y5 // c2
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+224(SB), Y5 // c1
	VFMADD213PD Y5, Y4, Y6
	VBROADCASTSD ·tanhc+232(SB), Y5 // c0
	VFMADD213PD Y5, Y4, Y6
	VCVTPD2DQY Y3, X7
	VPMOVSXDQ X7, Y7
	VBROADCASTSD ·tanhc+64(SB), Y5 // bias
	VPADDQ Y5, Y7, Y7
	VPSLLQ $52, Y7, Y7
	VMULPD Y7, Y6, Y6
	VBROADCASTSD ·tanhc+56(SB), Y5 // one
	VSUBPD Y6, Y5, Y8
	VADDPD Y6, Y5, Y9
	VDIVPD Y9, Y8, Y8
	VBROADCASTSD ·tanhc+8(SB), Y5 // signmask
	VANDPD Y5, Y0, Y9
	VXORPD Y9, Y8, Y8
	VMULPD Y0, Y0, Y10
	VBROADCASTSD ·tanhc+80(SB), Y11 // p0
	VBROADCASTSD ·tanhc+88(SB), Y5 // p1
	VFMADD213PD Y5, Y10, Y11
	VBROADCASTSD ·tanhc+96(SB), Y5 // p2
	VFMADD213PD Y5, Y10, Y11
	VBROADCASTSD ·tanhc+104(SB), Y12 // q0
	VADDPD Y12, Y10, Y12
	VBROADCASTSD ·tanhc+112(SB), Y5 // q1
	VFMADD213PD Y5, Y10, Y12
	VBROADCASTSD ·tanhc+120(SB), Y5 // q2
	VFMADD213PD Y5, Y10, Y12
	VDIVPD Y12, Y11, Y11
	VMULPD Y10, Y11, Y11
	VFMADD213PD Y0, Y0, Y11
	VBROADCASTSD ·tanhc+72(SB), Y5 // thr
	VCMPPD $1, Y5, Y1, Y13
	VBLENDVPD Y13, Y11, Y8, Y14
	VMOVUPD Y14, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func tanhAVX512(dst, src []float64)
//
// dst[i] = tanh(src[i]) for i < len(src) rounded down to a multiple of 8,
// eight at a time: the arithmetic of tanhAVX2 above, lane for lane and
// bit for bit, with every constant held in a register and one division
// instead of two (the rational branch's P/Q and the exponential branch's
// (1-e)/(1+e) share it).
TEXT ·tanhAVX512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	JZ   done

	VBROADCASTSD ·tanhc+0(SB), Z31  // absmask
	VBROADCASTSD ·tanhc+16(SB), Z29 // -2
	VBROADCASTSD ·tanhc+24(SB), Z28 // ymin
	VBROADCASTSD ·tanhc+32(SB), Z27 // log2e
	VBROADCASTSD ·tanhc+40(SB), Z26 // ln2hi
	VBROADCASTSD ·tanhc+48(SB), Z25 // ln2lo
	VBROADCASTSD ·tanhc+56(SB), Z24 // one
	VBROADCASTSD ·tanhc+72(SB), Z23 // thr
	VBROADCASTSD ·tanhc+80(SB), Z22 // p0
	VBROADCASTSD ·tanhc+88(SB), Z21 // p1
	VBROADCASTSD ·tanhc+96(SB), Z20 // p2
	VBROADCASTSD ·tanhc+104(SB), Z19 // q0
	VBROADCASTSD ·tanhc+112(SB), Z18 // q1
	VBROADCASTSD ·tanhc+120(SB), Z17 // q2
	VBROADCASTSD ·tanhc+128(SB), Z16 // c13
	VBROADCASTSD ·tanhc+136(SB), Z15 // c12
	VBROADCASTSD ·tanhc+144(SB), Z14 // c11
	VBROADCASTSD ·tanhc+152(SB), Z13 // c10
	VBROADCASTSD ·tanhc+160(SB), Z12 // c9
	VBROADCASTSD ·tanhc+168(SB), Z11 // c8
	VBROADCASTSD ·tanhc+176(SB), Z10 // c7
	VBROADCASTSD ·tanhc+184(SB), Z9  // c6
	VBROADCASTSD ·tanhc+192(SB), Z8  // c5
	VBROADCASTSD ·tanhc+200(SB), Z7  // c4
	VBROADCASTSD ·tanhc+208(SB), Z6  // c3
	VBROADCASTSD ·tanhc+216(SB), Z5  // c2 (c1 = c0 = one)

loop:
	VMOVUPD (SI), Z0
	VPANDQ  Z31, Z0, Z1              // a = |x|
	VCMPPD  $1, Z23, Z1, K1          // small: a < thr
	VMULPD  Z29, Z1, Z2              // y = -2a
	VMAXPD  Z2, Z28, Z2              // clamped at ymin (NaN stays NaN)
	VMULPD  Z27, Z2, Z3
	VRNDSCALEPD $0, Z3, Z3           // n = round(y log2e)
	VMOVAPD Z2, Z4
	VFNMADD231PD Z26, Z3, Z4         // r = y - n ln2hi
	VFNMADD231PD Z25, Z3, Z4         //     - n ln2lo
	VMOVAPD Z16, Z2                  // Horner: c13 ... c0
	VFMADD213PD Z15, Z4, Z2
	VFMADD213PD Z14, Z4, Z2
	VFMADD213PD Z13, Z4, Z2
	VFMADD213PD Z12, Z4, Z2
	VFMADD213PD Z11, Z4, Z2
	VFMADD213PD Z10, Z4, Z2
	VFMADD213PD Z9, Z4, Z2
	VFMADD213PD Z8, Z4, Z2
	VFMADD213PD Z7, Z4, Z2
	VFMADD213PD Z6, Z4, Z2
	VFMADD213PD Z5, Z4, Z2
	VFMADD213PD Z24, Z4, Z2
	VFMADD213PD Z24, Z4, Z2
	VSCALEFPD Z3, Z2, Z2             // e = exp(y) = poly 2^n
	VSUBPD  Z2, Z24, Z3              // 1 - e
	VADDPD  Z2, Z24, Z4              // 1 + e
	VMULPD  Z0, Z0, Z2               // s = x x
	VMOVAPD Z22, Z1                  // P(s)
	VFMADD213PD Z21, Z2, Z1
	VFMADD213PD Z20, Z2, Z1
	VADDPD  Z19, Z2, Z30             // Q(s)
	VFMADD213PD Z18, Z2, Z30
	VFMADD213PD Z17, Z2, Z30
	VMOVAPD Z1, K1, Z3               // numerator: P where small, else 1-e
	VMOVAPD Z30, K1, Z4              // denominator: Q where small, else 1+e
	VDIVPD  Z4, Z3, Z3
	VMULPD  Z3, Z2, Z2               // s (P/Q)
	VFMADD213PD Z0, Z0, Z2           // small: x + x s (P/Q)
	VPANDNQ Z0, Z31, Z1              // sign bit of x
	VPXORQ  Z1, Z3, Z3               // large: sign(x) (1-e)/(1+e)
	VMOVAPD Z2, K1, Z3
	VMOVUPD Z3, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET
