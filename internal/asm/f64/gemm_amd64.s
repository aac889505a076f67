//go:build !purego

#include "textflag.h"

// func gemmAVX2(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int)
//
// C[i][j] += sum_p A(i, p) * B[p][j] for i < m, j < n, where m is a multiple
// of 4 and n a multiple of 4, A(i, p) = a[i*aRow + p*aInner], B and C are
// row-major with leading dimensions ldb and ldc. Tiles of 4 rows × 8
// columns keep 8 independent FMA accumulators; a last 4-column tile
// handles n mod 8.
TEXT ·gemmAVX2(SB), NOSPLIT, $0-128
	MOVQ m+0(FP), R8
	MOVQ n+8(FP), R9
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
	SHLQ $3, R9                // n in bytes

rows:
	CMPQ R8, $4
	JLT  done
	XORQ R15, R15              // column offset in bytes

cols8:
	MOVQ R9, AX
	SUBQ R15, AX               // remaining bytes in the row
	CMPQ AX, $64
	JLT  cols4

	LEAQ    (DI)(R15*1), AX
	VMOVUPD (AX), Y0
	VMOVUPD 32(AX), Y1
	VMOVUPD (AX)(R14*1), Y2
	VMOVUPD 32(AX)(R14*1), Y3
	LEAQ    (AX)(R14*2), BX
	VMOVUPD (BX), Y4
	VMOVUPD 32(BX), Y5
	VMOVUPD (BX)(R14*1), Y6
	VMOVUPD 32(BX)(R14*1), Y7

	MOVQ  SI, AX               // A row 0
	LEAQ  (SI)(R11*2), BX      // A row 2
	LEAQ  (R12)(R15*1), CX     // B + j
	MOVQ  k+16(FP), DX
	TESTQ DX, DX
	JZ    store8

loop8:
	VMOVUPD      (CX), Y8
	VMOVUPD      32(CX), Y9
	VBROADCASTSD (AX), Y10
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VBROADCASTSD (AX)(R11*1), Y11
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y9, Y11, Y3
	VBROADCASTSD (BX), Y12
	VFMADD231PD  Y8, Y12, Y4
	VFMADD231PD  Y9, Y12, Y5
	VBROADCASTSD (BX)(R11*1), Y13
	VFMADD231PD  Y8, Y13, Y6
	VFMADD231PD  Y9, Y13, Y7
	ADDQ         R10, AX
	ADDQ         R10, BX
	ADDQ         R13, CX
	DECQ         DX
	JNZ          loop8

store8:
	LEAQ    (DI)(R15*1), AX
	VMOVUPD Y0, (AX)
	VMOVUPD Y1, 32(AX)
	VMOVUPD Y2, (AX)(R14*1)
	VMOVUPD Y3, 32(AX)(R14*1)
	LEAQ    (AX)(R14*2), BX
	VMOVUPD Y4, (BX)
	VMOVUPD Y5, 32(BX)
	VMOVUPD Y6, (BX)(R14*1)
	VMOVUPD Y7, 32(BX)(R14*1)
	ADDQ    $64, R15
	JMP     cols8

cols4:
	CMPQ AX, $32
	JLT  nextrows

	LEAQ    (DI)(R15*1), AX
	VMOVUPD (AX), Y0
	VMOVUPD (AX)(R14*1), Y2
	LEAQ    (AX)(R14*2), BX
	VMOVUPD (BX), Y4
	VMOVUPD (BX)(R14*1), Y6

	MOVQ  SI, AX
	LEAQ  (SI)(R11*2), BX
	LEAQ  (R12)(R15*1), CX
	MOVQ  k+16(FP), DX
	TESTQ DX, DX
	JZ    store4

loop4:
	VMOVUPD      (CX), Y8
	VBROADCASTSD (AX), Y10
	VFMADD231PD  Y8, Y10, Y0
	VBROADCASTSD (AX)(R11*1), Y11
	VFMADD231PD  Y8, Y11, Y2
	VBROADCASTSD (BX), Y12
	VFMADD231PD  Y8, Y12, Y4
	VBROADCASTSD (BX)(R11*1), Y13
	VFMADD231PD  Y8, Y13, Y6
	ADDQ         R10, AX
	ADDQ         R10, BX
	ADDQ         R13, CX
	DECQ         DX
	JNZ          loop4

store4:
	LEAQ    (DI)(R15*1), AX
	VMOVUPD Y0, (AX)
	VMOVUPD Y2, (AX)(R14*1)
	LEAQ    (AX)(R14*2), BX
	VMOVUPD Y4, (BX)
	VMOVUPD Y6, (BX)(R14*1)

nextrows:
	LEAQ (SI)(R11*4), SI
	LEAQ (DI)(R14*4), DI
	SUBQ $4, R8
	JMP  rows

done:
	VZEROUPPER
	RET
