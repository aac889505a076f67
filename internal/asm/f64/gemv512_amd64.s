//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

// Matrix-vector products for one-column results (a scalar output layer),
// which the 4×24 tiles of gemm512_amd64.s would mostly waste.

// func dotRows512(m, k int, a []float64, lda int, x, y []float64, acc int)
//
// y[i] = (acc != 0 ? y[i] : 0) + sum_p a[i*lda + p] x[p] for i < m: one
// dot product per row, eight lanes at a time with the last lanes masked.
TEXT ·dotRows512(SB), NOSPLIT, $0-104
	MOVQ m+0(FP), R8
	MOVQ k+8(FP), R9
	MOVQ a_base+16(FP), SI
	MOVQ lda+40(FP), R10
	SHLQ $3, R10
	MOVQ x_base+48(FP), R11
	MOVQ y_base+72(FP), DI
	MOVQ acc+96(FP), R12
	// Tail mask: the last k mod 8 lanes (all eight when k is a multiple).
	MOVQ R9, CX
	ANDQ $7, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	TESTQ CX, CX
	JNZ  maskok
	MOVQ $0xff, AX
maskok:
	KMOVQ AX, K1
	MOVQ R9, R13
	SUBQ $1, R13
	SHRQ $3, R13               // number of full 8-lane chunks before the tail chunk
	TESTQ R8, R8
	JZ   dotdone
	TESTQ R9, R9
	JZ   zerok

dotrow:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	MOVQ SI, AX
	MOVQ R11, BX
	MOVQ R13, CX
	TESTQ CX, CX
	JZ   dottail
dotchunk:
	VMOVUPD (AX), Z2
	VFMADD231PD (BX), Z2, Z0
	ADDQ $64, AX
	ADDQ $64, BX
	DECQ CX
	JZ   dottail
	VMOVUPD (AX), Z3
	VFMADD231PD (BX), Z3, Z1
	ADDQ $64, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  dotchunk
dottail:
	VMOVUPD.Z (AX), K1, Z2
	VMOVUPD.Z (BX), K1, Z3
	VFMADD231PD Z3, Z2, Z0
	VADDPD Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	TESTQ R12, R12
	JZ   dotstore
	VADDSD (DI), X0, X0
dotstore:
	VMOVSD X0, (DI)
	ADDQ R10, SI
	ADDQ $8, DI
	DECQ R8
	JNZ  dotrow
	JMP  dotdone

zerok:
	TESTQ R12, R12
	JNZ  dotdone
	VPXORQ Z0, Z0, Z0
zerorow:
	VMOVSD X0, (DI)
	ADDQ $8, DI
	DECQ R8
	JNZ  zerorow

dotdone:
	VZEROUPPER
	RET

// func rowGemm512(n, k int, x, b []float64, ldb int, c []float64, acc int)
//
// c[j] = (acc != 0 ? c[j] : 0) + sum_p x[p] b[p*ldb + j] for j < n: a
// one-row matrix product, 24 columns at a time with the last masked.
TEXT ·rowGemm512(SB), NOSPLIT, $0-104
	MOVQ n+0(FP), R9
	MOVQ x_base+16(FP), SI
	MOVQ b_base+40(FP), R12
	MOVQ ldb+64(FP), R13
	SHLQ $3, R13
	MOVQ c_base+72(FP), DI
	XORQ R15, R15              // column offset in bytes
	SHLQ $3, R9

rgcols:
	MOVQ R9, AX
	SUBQ R15, AX
	JLE  rgdone
	SHRQ $3, AX                // remaining columns w
	LANEMASKS

	LEAQ (DI)(R15*1), AX
	MOVQ acc+96(FP), DX
	TESTQ DX, DX
	JZ   rgzero
	VMOVUPD.Z (AX), K1, Z0
	VMOVUPD.Z 64(AX), K2, Z1
	VMOVUPD.Z 128(AX), K3, Z2
	JMP  rgprod
rgzero:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
rgprod:
	VPXORQ Z3, Z3, Z3          // second set of accumulators (odd p)
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	MOVQ SI, AX                // x
	LEAQ (R12)(R15*1), CX      // B + j
	MOVQ k+8(FP), DX
	SHRQ $1, DX
	JZ   rgodd
rgloop:
	VBROADCASTSD (AX), Z6
	VMOVUPD.Z    (CX), K1, Z8
	VMOVUPD.Z    64(CX), K2, Z9
	VMOVUPD.Z    128(CX), K3, Z10
	VFMADD231PD  Z8, Z6, Z0
	VFMADD231PD  Z9, Z6, Z1
	VFMADD231PD  Z10, Z6, Z2
	ADDQ         R13, CX
	VBROADCASTSD 8(AX), Z7
	VMOVUPD.Z    (CX), K1, Z8
	VMOVUPD.Z    64(CX), K2, Z9
	VMOVUPD.Z    128(CX), K3, Z10
	VFMADD231PD  Z8, Z7, Z3
	VFMADD231PD  Z9, Z7, Z4
	VFMADD231PD  Z10, Z7, Z5
	ADDQ         R13, CX
	ADDQ         $16, AX
	DECQ         DX
	JNZ          rgloop
rgodd:
	MOVQ k+8(FP), DX
	ANDQ $1, DX
	JZ   rgstore
	VBROADCASTSD (AX), Z6
	VMOVUPD.Z    (CX), K1, Z8
	VMOVUPD.Z    64(CX), K2, Z9
	VMOVUPD.Z    128(CX), K3, Z10
	VFMADD231PD  Z8, Z6, Z0
	VFMADD231PD  Z9, Z6, Z1
	VFMADD231PD  Z10, Z6, Z2
rgstore:
	VADDPD Z3, Z0, Z0
	VADDPD Z4, Z1, Z1
	VADDPD Z5, Z2, Z2
	LEAQ    (DI)(R15*1), AX
	VMOVUPD Z0, K1, (AX)
	VMOVUPD Z1, K2, 64(AX)
	VMOVUPD Z2, K3, 128(AX)
	ADDQ    $192, R15
	JMP     rgcols

rgdone:
	VZEROUPPER
	RET
