//go:build amd64 && !purego

#include "textflag.h"

// COPY_BLOCK stores the 32 bytes of src at AX in dst at BX, keeping them
// in X0 and X1, or ends the call when src or dst lacks the room.
#define COPY_BLOCK \
	CMPQ  AX, R9; JGT done; \
	CMPQ  BX, R8; JGT done; \
	MOVOU (SI)(AX*1), X0; MOVOU 16(SI)(AX*1), X1; \
	MOVOU X0, (DI)(BX*1); MOVOU X1, 16(DI)(BX*1)

// SPECIALS sets to 0xff each byte of out whose byte in in is special: below
// 0x20 or non-ASCII (0x20 > b, signed), '"' or '&', '<' or '>', '\\'. It
// uses X3 and X4, and in is lost.
#define SPECIALS(in, out) \
	MOVO X8, out; PCMPGTB in, out; \
	MOVO in, X3; POR X9, X3; PCMPEQB X10, X3; \
	MOVO in, X4; POR X11, X4; PCMPEQB X12, X4; \
	PCMPEQB X13, in; \
	POR X3, out; POR X4, out; POR in, out

// func escapeBlocks(dst *byte, room int, src *byte, n int, words *[128]uint64, lens *[128]uint8) (read, written int)
//
// Each 32-byte block of src is stored in dst as it is, then tested: a byte
// is special when it is below 0x20 or at or above 0x80 (one signed compare
// with 0x20), '"' or '&' (b|0x04 == 0x26), '<' or '>' (b|0x02 == 0x3e), or
// '\\'. A block without one costs no branch but the loop's; at the first
// special byte the block is kept up to it, an ASCII byte's escape is
// stored as one word, and the rest of the block is stored again after it,
// its other special bytes known from the same mask.
TEXT ·escapeBlocks(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ room+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), R9
	MOVQ words+32(FP), R10
	MOVQ lens+40(FP), R11
	XORQ AX, AX // read
	XORQ BX, BX // written
	SUBQ $32, R9 // a block is loaded while read <= n-32
	SUBQ $40, R8 // and stored while written <= room-40 (a block, then an escape word)

	MOVQ $0x2020202020202020, CX
	MOVQ CX, X8
	PUNPCKLQDQ X8, X8
	MOVQ $0x0404040404040404, CX
	MOVQ CX, X9
	PUNPCKLQDQ X9, X9
	MOVQ $0x2626262626262626, CX
	MOVQ CX, X10
	PUNPCKLQDQ X10, X10
	MOVQ $0x0202020202020202, CX
	MOVQ CX, X11
	PUNPCKLQDQ X11, X11
	MOVQ $0x3e3e3e3e3e3e3e3e, CX
	MOVQ CX, X12
	PUNPCKLQDQ X12, X12
	MOVQ $0x5c5c5c5c5c5c5c5c, CX
	MOVQ CX, X13
	PUNPCKLQDQ X13, X13

loop:
	COPY_BLOCK
	SPECIALS(X0, X2)
	SPECIALS(X1, X5)
	PMOVMSKB X2, R12
	PMOVMSKB X5, DX
	SHLQ     $16, DX
	ORQ      DX, R12
	JNZ      specials
	ADDQ     $32, AX
	ADDQ     $32, BX
	JMP      loop

specials:
	LEAQ 32(AX), R13 // where the block ends in src

next:
	BSFQ    R12, CX // the next special byte, from AX on
	ADDQ    CX, AX
	ADDQ    CX, BX
	MOVBQZX (SI)(AX*1), DX
	CMPQ    DX, $0x80
	JAE     done // non-ASCII: the caller decodes it
	MOVQ    (R10)(DX*8), R14
	MOVQ    R14, (DI)(BX*1)
	MOVBQZX (R11)(DX*1), R14
	ADDQ    R14, BX
	INCQ    AX
	INCQ    CX
	SHRQ    CX, R12 // the mask from AX on

	// The rest of the block moves to where it now goes (with bytes past
	// it, which the next block overwrites).
	COPY_BLOCK
	TESTQ R12, R12
	JNZ   next
	MOVQ  R13, CX // no special left in the block: on to its end
	SUBQ  AX, CX
	ADDQ  CX, BX
	MOVQ  R13, AX
	JMP   loop

done:
	MOVQ AX, read+48(FP)
	MOVQ BX, written+56(FP)
	RET
