// LANEMASKS sets K1, K2 and K3 to the lanes of a 24-column tile that hold
// columns, for w remaining columns in AX: the first min(w, 8),
// min(max(w-8, 0), 8) and min(max(w-16, 0), 8) lanes of its three 8-lane
// registers. It uses BX, CX and DX. laneMask is in gemm512_amd64.s.
#define LANEMASKS \
	LEAQ ·laneMask(SB), CX; \
	MOVQ $8, DX; \
	MOVQ AX, BX; \
	CMPQ BX, DX; \
	CMOVQGT DX, BX; \
	KMOVB (CX)(BX*1), K1; \
	MOVQ AX, BX; \
	SUBQ $8, BX; \
	MOVQ $0, DX; \
	CMPQ BX, DX; \
	CMOVQLT DX, BX; \
	MOVQ $8, DX; \
	CMPQ BX, DX; \
	CMOVQGT DX, BX; \
	KMOVB (CX)(BX*1), K2; \
	MOVQ AX, BX; \
	SUBQ $16, BX; \
	MOVQ $0, DX; \
	CMPQ BX, DX; \
	CMOVQLT DX, BX; \
	MOVQ $8, DX; \
	CMPQ BX, DX; \
	CMOVQGT DX, BX; \
	KMOVB (CX)(BX*1), K3
