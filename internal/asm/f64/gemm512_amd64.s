//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

// Byte masks of the first i lanes, i = 0..8.
DATA ·laneMask+0(SB)/1, $0x00
DATA ·laneMask+1(SB)/1, $0x01
DATA ·laneMask+2(SB)/1, $0x03
DATA ·laneMask+3(SB)/1, $0x07
DATA ·laneMask+4(SB)/1, $0x0f
DATA ·laneMask+5(SB)/1, $0x1f
DATA ·laneMask+6(SB)/1, $0x3f
DATA ·laneMask+7(SB)/1, $0x7f
DATA ·laneMask+8(SB)/1, $0xff
GLOBL ·laneMask(SB), RODATA|NOPTR, $16

// func gemmAVX512(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int, d []float64, ldd int, zero int)
//
// C[i][j] = D[i][j] + sum_p A(i, p) * B[p][j] for i < m (a multiple of 4),
// j < n, where A(i, p) = a[i*aRow + p*aInner], B and C are row-major with
// leading dimensions ldb and ldc, and D[i][j] = d[i*ldd + j] (ldd = 0
// repeats one row; d may be c itself), or 0 when zero is nonzero. Tiles
// of 4 rows × 24 columns (three 8-lane registers per row, the last
// columns masked) keep 12 FMA accumulators.
TEXT ·gemmAVX512(SB), NOSPLIT, $0-168
	MOVQ m+0(FP), R8
	MOVQ a_base+24(FP), SI
	MOVQ aRow+48(FP), R11
	SHLQ $3, R11
	MOVQ aInner+56(FP), R10
	SHLQ $3, R10
	MOVQ b_base+64(FP), R12
	MOVQ ldb+88(FP), R13
	SHLQ $3, R13
	MOVQ c_base+96(FP), DI
	MOVQ ldc+120(FP), R14
	SHLQ $3, R14
	MOVQ d_base+128(FP), R9

rows:
	CMPQ R8, $4
	JLT  done
	XORQ R15, R15              // column offset in bytes

cols:
	MOVQ n+8(FP), AX
	SHLQ $3, AX
	SUBQ R15, AX               // remaining bytes in the row
	JLE  nextrows
	SHRQ $3, AX                // remaining columns w
	LANEMASKS

	MOVQ zero+160(FP), AX
	TESTQ AX, AX
	JZ   loadd
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	JMP  prod

loadd:
	MOVQ ldd+152(FP), DX
	SHLQ $3, DX
	LEAQ (R9)(R15*1), AX
	VMOVUPD.Z (AX), K1, Z0
	VMOVUPD.Z 64(AX), K2, Z1
	VMOVUPD.Z 128(AX), K3, Z2
	ADDQ DX, AX
	VMOVUPD.Z (AX), K1, Z3
	VMOVUPD.Z 64(AX), K2, Z4
	VMOVUPD.Z 128(AX), K3, Z5
	ADDQ DX, AX
	VMOVUPD.Z (AX), K1, Z6
	VMOVUPD.Z 64(AX), K2, Z7
	VMOVUPD.Z 128(AX), K3, Z8
	ADDQ DX, AX
	VMOVUPD.Z (AX), K1, Z9
	VMOVUPD.Z 64(AX), K2, Z10
	VMOVUPD.Z 128(AX), K3, Z11

prod:
	MOVQ  SI, AX               // A row 0
	LEAQ  (SI)(R11*2), BX      // A row 2
	LEAQ  (R12)(R15*1), CX     // B + j
	MOVQ  k+16(FP), DX
	TESTQ DX, DX
	JZ    store

loop:
	VMOVUPD.Z    (CX), K1, Z12
	VMOVUPD.Z    64(CX), K2, Z13
	VMOVUPD.Z    128(CX), K3, Z14
	VBROADCASTSD (AX), Z15
	VFMADD231PD  Z12, Z15, Z0
	VFMADD231PD  Z13, Z15, Z1
	VFMADD231PD  Z14, Z15, Z2
	VBROADCASTSD (AX)(R11*1), Z16
	VFMADD231PD  Z12, Z16, Z3
	VFMADD231PD  Z13, Z16, Z4
	VFMADD231PD  Z14, Z16, Z5
	VBROADCASTSD (BX), Z17
	VFMADD231PD  Z12, Z17, Z6
	VFMADD231PD  Z13, Z17, Z7
	VFMADD231PD  Z14, Z17, Z8
	VBROADCASTSD (BX)(R11*1), Z18
	VFMADD231PD  Z12, Z18, Z9
	VFMADD231PD  Z13, Z18, Z10
	VFMADD231PD  Z14, Z18, Z11
	ADDQ         R10, AX
	ADDQ         R10, BX
	ADDQ         R13, CX
	DECQ         DX
	JNZ          loop

store:
	LEAQ    (DI)(R15*1), AX
	VMOVUPD Z0, K1, (AX)
	VMOVUPD Z1, K2, 64(AX)
	VMOVUPD Z2, K3, 128(AX)
	ADDQ    R14, AX
	VMOVUPD Z3, K1, (AX)
	VMOVUPD Z4, K2, 64(AX)
	VMOVUPD Z5, K3, 128(AX)
	ADDQ    R14, AX
	VMOVUPD Z6, K1, (AX)
	VMOVUPD Z7, K2, 64(AX)
	VMOVUPD Z8, K3, 128(AX)
	ADDQ    R14, AX
	VMOVUPD Z9, K1, (AX)
	VMOVUPD Z10, K2, 64(AX)
	VMOVUPD Z11, K3, 128(AX)
	ADDQ    $192, R15
	JMP     cols

nextrows:
	LEAQ (SI)(R11*4), SI
	LEAQ (DI)(R14*4), DI
	MOVQ ldd+152(FP), AX
	SHLQ $5, AX                // 4 rows of d
	ADDQ AX, R9
	SUBQ $4, R8
	JMP  rows

done:
	VZEROUPPER
	RET
