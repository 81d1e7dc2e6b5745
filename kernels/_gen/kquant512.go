package main

import "fmt"

func init() { files["kquant_avx512_amd64.s"] = kq512File }

// kq512File writes kquant_avx512_amd64.s: q5kVecAVX512 and
// q5kVec4AVX512, the AVX2 tier's q5kVecAVX2 and q5kVec4AVX2
// (kquantavx2.go) with a 64-byte chunk of quants per step, a
// sub-block of low nibbles in one half of a ZMM register and the next
// sub-block's high nibbles in the other. Each half's int32 lanes sum what
// the AVX2 kernel's two YMM accumulators sum, and the float steps are its
// own, so the results have its bits (TestAVX512SameBitsAsAVX2). Zen 5,
// one thread, 128x2048 in cache: 0.15-0.16 against 0.11-0.12 billion
// blocks a second; BenchmarkDecodeStream (two threads, from memory): 0.82
// of the read probe against 0.62-0.66; the four-row kernel, Q5_K_M pp512
// of the Qwen3-1.7B shape (siskin bench, two threads, two alternated
// runs): 118.0-118.1 against 90.0-91.3 tokens/s. The AVX2 kernel's
// VPMADDWD and add are one VPDPWSSD here (exact either way).
func kq512File() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`#include "avx2_amd64.h"

// Q5_K weights times one or four activation rows in the q8ka layout on AVX-512
// (kquant512.go): the AVX2 kernel's sums and float steps, a 64-byte chunk
// of quants at a time.
`)
	kqAConstants(a)
	a.data64("k5m0f", splat(0x0f))
	a.data64("k5x10", splat(0x10))
	// k5shift: the word shifts of VPSRLVW, 0 for the low nibbles (the low
	// 32 bytes), 4 for the high ones.
	shift := make([]byte, 64)
	for i := 32; i < 64; i += 2 {
		shift[i] = 4 // the low byte of a little-endian word
	}
	kqAData(a, "k5shift", shift)
	// k5bits+64k: chunk k's fifth bits, bit 2k of qh in the low 32 bytes
	// (its low nibbles' sub-block), 2k+1 in the high.
	var bits []byte
	for k := 0; k < 4; k++ {
		for i := 0; i < 64; i++ {
			bits = append(bits, byte(1)<<(2*k+i/32))
		}
	}
	kqAData(a, "k5bits", bits)
	// k5perm+64k: VPERMD indices putting scale 2k in the low 8 dwords
	// and 2k+1 in the high 8.
	for k := 0; k < 4; k++ {
		a.dwords64(fmt.Sprintf("k5perm%d", k), func(i int) uint32 { return uint32(2*k + i/8) })
	}
	q5kVec512(a, 1)
	q5kVec512(a, 4)
	return a
}

// q5kVec512 emits q5kVecAVX512(out []float32, w []byte, stride, blocks
// int, x []byte) (rows = 1) or q5kVec4AVX512(out []float32, ostride int,
// w []byte, stride, rows, blocks int, x []byte, xstride int) (rows = 4):
// kqAKVec's Q5_K kernels (their registers, frame, pipelined scale decode
// and float steps) with kq512Block for a block. Z26 0x0f bytes, Z27 0x10
// bytes, Z22-Z25 k5perm.
func q5kVec512(a *asm, rows int) {
	name, l := "q5kVecAVX512", "q5kz"
	if rows == 4 {
		name, l = "q5kVec4AVX512", "q5kz4"
	}
	kqAKLoop(a, kqAQ5K, rows, name, l, func() {
		a.op("VMOVDQU64 k5m0f<>(SB), Z26")
		a.op("VMOVDQU64 k5x10<>(SB), Z27")
		for k := 0; k < 4; k++ {
			a.op("VMOVDQU64 k5perm%d<>(SB), Z%d", k, 22+k)
		}
	}, func(buf int, mn string) { kq512Block(a, kqAQ5K, rows, buf, mn) })
}

// kq512Block emits one Q5_K super-block for 1 or 4 activation rows,
// scales in the stack buffer at buf and mins in mn: chunk k's 32 bytes of
// nibbles are loaded into both halves of Z16, the high half shifted down
// 4, both masked to nibbles, the fifth bits (bits 2k and 2k+1 of the qh
// bytes, Z20) added at bit 4, and VPMADDUBSW, then VPDPWSSD with the
// sub-blocks' scales (Z17: VPMADDWD and an add, without saturation) sum
// into Z8+r for activation row r: its low half is the AVX2 kernel's sum
// of the low sub-blocks, its high half that of the high ones, added
// before kqAFloat.
func kq512Block(a *asm, t kqAType, rows, buf int, mn string) {
	if rows == 1 {
		for p := 1024; p < 1024+192; p += 64 {
			a.op("PREFETCHT0 %d(BX)", p)
		}
	}
	for r := 0; r < rows; r++ {
		a.op("VPXORD Z%d, Z%d, Z%d", 8+r, 8+r, 8+r)
	}
	a.op("VBROADCASTI64X4 16(BX), Z20")
	// Two loads, one per 16-byte store of kqAScales: a 32-byte load
	// across both cannot take its data from the store buffer (measured
	// 1.36x slower in cache).
	a.op("VMOVDQU32 %d(SP), X21", buf)
	a.op("VINSERTI32X4 $1, %d(SP), Y21, Y21", buf+16)
	for k := 0; k < 4; k++ {
		a.op("VBROADCASTI64X4 %d(BX), Z16", t.qs+32*k)
		a.op("VPSRLVW k5shift<>(SB), Z16, Z16")
		a.op("VPANDD Z26, Z16, Z16")
		a.op("VPTESTMB k5bits<>+%d(SB), Z20, K1", 64*k)
		a.op("VPADDB Z27, Z16, K1, Z16")
		a.op("VPERMD Z21, Z%d, Z17", 22+k)
		for r := 0; r < rows; r++ {
			a.op("VPMADDUBSW %s, Z16, Z18", act(64*k, "R12", r))
			a.op("VPDPWSSD Z17, Z18, Z%d", 8+r)
		}
	}
	for r := 0; r < rows; r++ {
		a.op("VEXTRACTI64X4 $1, Z%d, Y19", 8+r)
		a.op("VPADDD Y19, Y%d, Y%d", 8+r, 8+r)
	}
	a.op("VCVTPH2PS (BX), X1")
	for r := 0; r < rows; r++ {
		kqAFloat(a, kqARow("R13", r), kqARow(kqASums(rows), r), y(8+r), y(12+r), mn)
	}
}
