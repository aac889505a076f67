//go:build !purego

#include "textflag.h"

// Elementwise kernels of the tanh derivatives and of accumulation, eight
// lanes at a time; each handles len(first argument) rounded down to a
// multiple of 8 (the caller does the rest) and reads the other slices at
// the same positions.

DATA elemone<>+0(SB)/8, $0x3ff0000000000000 // 1
DATA elemone<>+8(SB)/8, $0xc000000000000000 // -2
GLOBL elemone<>(SB), RODATA|NOPTR, $16

// VJPTARGS loads tanhVJPTangent512's and tanhVJPTangentSet512's
// arguments (dgx DI, count of 8-lane blocks CX, y SI, g R8, dg R9, dx
// R10) and constants (1 in Z31, -2 in Z30).
#define VJPTARGS \
	MOVQ dgx_base+0(FP), DI; \
	MOVQ dgx_len+8(FP), CX; \
	MOVQ y_base+24(FP), SI; \
	MOVQ g_base+48(FP), R8; \
	MOVQ dg_base+72(FP), R9; \
	MOVQ dx_base+96(FP), R10; \
	SHRQ $3, CX; \
	VBROADCASTSD elemone<>+0(SB), Z31; \
	VBROADCASTSD elemone<>+8(SB), Z30

// VJPTTERMS sets Z1 = 1 - y y and Z2 = dg - 2 y dx g for the next eight
// lanes.
#define VJPTTERMS \
	VMOVUPD (SI), Z0; \
	VMOVAPD Z31, Z1; \
	VFNMADD231PD Z0, Z0, Z1; \
	VMULPD  Z30, Z0, Z2; \
	VMULPD  (R10), Z2, Z2; \
	VMULPD  (R8), Z2, Z2; \
	VADDPD  (R9), Z2, Z2

// VJPTNEXT stores Z3 to dgx and moves on by eight lanes.
#define VJPTNEXT \
	VMOVUPD Z3, (DI); \
	ADDQ $64, SI; \
	ADDQ $64, R8; \
	ADDQ $64, R9; \
	ADDQ $64, R10; \
	ADDQ $64, DI

// func tanhJVP512(dy, y, dx []float64): dy = (1 - y²) dx
TEXT ·tanhJVP512(SB), NOSPLIT, $0-72
	MOVQ dy_base+0(FP), DI
	MOVQ dy_len+8(FP), CX
	MOVQ y_base+24(FP), SI
	MOVQ dx_base+48(FP), DX
	SHRQ $3, CX
	JZ   jvpdone
	VBROADCASTSD elemone<>+0(SB), Z31
jvploop:
	VMOVUPD (SI), Z0
	VMOVAPD Z31, Z1
	VFNMADD231PD Z0, Z0, Z1          // 1 - y y
	VMULPD  (DX), Z1, Z1
	VMOVUPD Z1, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	DECQ CX
	JNZ  jvploop
jvpdone:
	VZEROUPPER
	RET

// func tanhVJP512(gx, y, g []float64): gx += (1 - y²) g
TEXT ·tanhVJP512(SB), NOSPLIT, $0-72
	MOVQ gx_base+0(FP), DI
	MOVQ gx_len+8(FP), CX
	MOVQ y_base+24(FP), SI
	MOVQ g_base+48(FP), DX
	SHRQ $3, CX
	JZ   vjpdone
	VBROADCASTSD elemone<>+0(SB), Z31
vjploop:
	VMOVUPD (SI), Z0
	VMOVAPD Z31, Z1
	VFNMADD231PD Z0, Z0, Z1          // 1 - y y
	VMOVUPD (DI), Z2
	VFMADD231PD (DX), Z1, Z2         // gx + (1 - y y) g
	VMOVUPD Z2, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	DECQ CX
	JNZ  vjploop
vjpdone:
	VZEROUPPER
	RET

// func tanhVJPTangent512(dgx, y, g, dg, dx []float64): dgx += (1 - y²) (dg - 2 y dx g)
TEXT ·tanhVJPTangent512(SB), NOSPLIT, $0-120
	VJPTARGS
	TESTQ CX, CX
	JZ   vjptdone
vjptloop:
	VJPTTERMS
	VMOVUPD (DI), Z3
	VFMADD231PD Z2, Z1, Z3
	VJPTNEXT
	DECQ CX
	JNZ  vjptloop
vjptdone:
	VZEROUPPER
	RET

// func tanhVJPTangentSet512(dgx, y, g, dg, dx []float64): dgx = 0 + (1 - y²) (dg - 2 y dx g),
// tanhVJPTangent512 on a zeroed dgx without reading it.
TEXT ·tanhVJPTangentSet512(SB), NOSPLIT, $0-120
	VJPTARGS
	TESTQ CX, CX
	JZ   vjptsdone
vjptsloop:
	VJPTTERMS
	VXORPD  Z3, Z3, Z3               // +0 in place of dgx
	VFMADD231PD Z2, Z1, Z3
	VJPTNEXT
	DECQ CX
	JNZ  vjptsloop
vjptsdone:
	VZEROUPPER
	RET

// func addTo512(dst, src []float64): dst += src
TEXT ·addTo512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	SHRQ $3, CX
	JZ   adddone
addloop:
	VMOVUPD (DI), Z0
	VADDPD  (SI), Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  addloop
adddone:
	VZEROUPPER
	RET

// func setSum512(dst, src []float64): dst = 0 + src, addTo512 on a zeroed
// dst without reading it.
TEXT ·setSum512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	SHRQ $3, CX
	JZ   setsumdone
setsumloop:
	VXORPD  Z0, Z0, Z0
	VADDPD  (SI), Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  setsumloop
setsumdone:
	VZEROUPPER
	RET
