//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

// func addRows512(dst, src []float64, rows, ld int)
//
// dst[j] += src[r*ld + j] for r = 0, 1, ..., rows-1 in that order, for
// j < len(dst) <= 24: one accumulator per column in three 8-lane
// registers, the last columns masked, so every column adds its rows in
// the same order as one AddTo per row.
TEXT ·addRows512(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), AX
	MOVQ src_base+24(FP), SI
	MOVQ rows+48(FP), R8
	MOVQ ld+56(FP), R9
	SHLQ $3, R9
	LANEMASKS
	VMOVUPD.Z (DI), K1, Z0
	VMOVUPD.Z 64(DI), K2, Z1
	VMOVUPD.Z 128(DI), K3, Z2
	TESTQ R8, R8
	JZ    arstore

arloop:
	VMOVUPD.Z (SI), K1, Z3
	VMOVUPD.Z 64(SI), K2, Z4
	VMOVUPD.Z 128(SI), K3, Z5
	VADDPD    Z3, Z0, Z0
	VADDPD    Z4, Z1, Z1
	VADDPD    Z5, Z2, Z2
	ADDQ      R9, SI
	DECQ      R8
	JNZ       arloop

arstore:
	VMOVUPD Z0, K1, (DI)
	VMOVUPD Z1, K2, 64(DI)
	VMOVUPD Z2, K3, 128(DI)
	VZEROUPPER
	RET
