package main

import "fmt"

// The Q6_K AMX kernel, for Q4_K_M's Q6_K tensors (attn_v and ffn_down of
// some layers): like q4kAMX, two groups (16 weight rows) and 32
// activation rows at a time, its weights unpacked once per block for all
// the rows. Q6_K's 16-element sub-blocks each have a signed 8-bit scale
// sc, and its quants q (0..63) stand for q-32. The unpacking multiplies
// each weight out in words, w = sc*(q-32) (-4064..4096), and splits it
// into its two bytes: w = 256*hi + lo, hi signed (-16..16), lo unsigned.
// One tile product takes hi (TDPBSSD), another lo (TDPBSUD: signed
// activations, unsigned weights), and I = 256*Chi + Clo is exactly the
// integer the eight-row kernel forms from VPDPBUSD, VPMULLD and the
// activations' sums; the float step after it is q6k8z's, so results have
// vec1's bits. The tiles are q4kAMX's (A 0 and 5, B 1 and 2 for hi and
// lo, C 3 and 4 for rows 0-15, 6 and 7 for rows 16-31).

// Scratch of q6kAMX, from the 64-byte aligned DX: the B tiles of the four
// chunks of 64 elements (chunk c's hi tile at q6Bt+2048c, lo 1024 on) and
// the stored C tiles (hi and lo of rows 0-15, then of rows 16-31).
const (
	q6Bt, q6Ct, q6Scratch = 0, 8192, 12288
)

// amx6Consts emits q6kAMX's constants: the byte shuffles that copy the
// first (h = 0) or second (h = 1) word of each dword of sign-extended
// scale pairs into both its words, and the 0x20 bytes and the low-byte
// word mask.
func amx6Consts(a *asm) {
	var lo, hi [32]byte
	for i := range lo {
		d := i &^ 3 % 16
		lo[i] = byte(d + i%2)
		hi[i] = byte(d + 2 + i%2)
	}
	a.data64("amxq6lo", lo)
	a.data64("amxq6hi", hi)
	a.data64("amxk20", splat(0x20))
	var m [32]byte
	for i := 0; i < 32; i += 2 {
		m[i] = 0xff
	}
	a.data64("amxkw00ff", m)
}

// q6kAMX is the Q6_K AMX kernel, on amx32Kernel's skeleton (the
// activations' sums are not needed: q-32 is in the weights).
func q6kAMX(a *asm) {
	amx32Kernel(a, amx32{
		name: "q6kPackVec32AMX", label: "q6kamx", gb: 1680, scratch: q6Scratch,
		bt: q6Bt, ct: q6Ct, shift: 8, loUnsigned: true,
		unpack: q6kAMXUnpack,
		group: func(a *asm) {
			pairLoad16x(a, 1664, 28)
			a.op("VCVTPH2PS Y28, Z28")
		},
		finish: q6kAMXFloat,
	})
}

// q6kAMXUnpack writes the block's B tiles. Z(8n+2t+h) gets the scales of
// sub-block (n, t, h) (elements 128n+32t+16h on) as words, both words of
// a weight row's dword; then each packed load of quants (16 weight rows
// of 4 elements: the low nibbles type t = pass of half n, the high ones
// type pass+2, with their two high bits from qh) becomes row 8*pass+4h+k
// of chunk 2n's or 2n+1's tiles.
func q6kAMXUnpack(a *asm) {
	for p := 0; p < 8; p++ {
		n, t := p/4, p%4
		pairLoad16x(a, 1536+16*p, 16)
		a.op("VPMOVSXBW Y16, Z16")
		a.op("VPSHUFB amxq6lo<>(SB), Z16, %s", z(8*n+2*t))
		a.op("VPSHUFB amxq6hi<>(SB), Z16, %s", z(8*n+2*t+1))
	}
	a.op("VMOVDQU64 v8k0f<>(SB), Z22")
	a.op("VMOVDQU64 v8k30<>(SB), Z23")
	a.op("VMOVDQU64 amxk20<>(SB), Z24")
	a.op("VMOVDQU64 amxkw00ff<>(SB), Z25")
	for n := 0; n < 2; n++ {
		for h := 0; h < 2; h++ {
			for k := 0; k < 4; k++ {
				pairLoad(a, 1024+256*n+128*h+32*k, 17)
				for pass := 0; pass < 2; pass++ {
					pairLoad(a, 512*n+256*pass+128*h+32*k, 16)
					row := 64 * (8*pass + 4*h + k)
					// 0xF8: dst | (src2 & src3).
					a.op("VPSLLW $%d, Z17, Z26", 4-2*pass)
					a.op("VPANDD Z22, Z16, Z18")
					a.op("VPTERNLOGD $0xF8, Z23, Z26, Z18")
					q6kAMXSplit(a, z(8*n+2*pass+h), q6Bt+2048*(2*n)+row)
					a.op("VPSRLW $4, Z16, Z18")
					a.op("VPANDD Z22, Z18, Z18")
					qh := "Z17"
					if pass == 1 {
						a.op("VPSRLW $2, Z17, Z26")
						qh = "Z26"
					}
					a.op("VPTERNLOGD $0xF8, Z23, %s, Z18", qh)
					q6kAMXSplit(a, z(8*n+2*(pass+2)+h), q6Bt+2048*(2*n+1)+row)
				}
			}
		}
	}
}

// q6kAMXSplit turns the quants q in Z18 (bytes 0..63) into w = sc*(q-32)
// for the scale words in sc, even and odd bytes in separate words, and
// stores their high bytes to the hi tile row at off(DX), their low bytes
// to the lo tile's, 1024 on. 0xD8: src3 ? src2 : dst (bitwise).
func q6kAMXSplit(a *asm, sc string, off int) {
	a.op("VPSUBB Z24, Z18, Z18")
	a.op("VPSLLW $8, Z18, Z19")
	a.op("VPSRAW $8, Z19, Z19")
	a.op("VPSRAW $8, Z18, Z20")
	a.op("VPMULLW %s, Z19, Z19", sc)
	a.op("VPMULLW %s, Z20, Z20", sc)
	a.op("VPSLLW $8, Z20, Z21")
	a.op("VPTERNLOGD $0xD8, Z25, Z19, Z21")
	a.op("VPSRLW $8, Z19, Z19")
	a.op("VPTERNLOGD $0xD8, Z25, Z19, Z20")
	a.op("VMOVDQA64 Z20, %d(DX)", off)
	a.op("VMOVDQA64 Z21, %d(DX)", off+1024)
}

// q6kAMXFloat finishes the block for activation rows m0..m0+7 of the
// group, whose integer sums I are in Z(m0%16)...: F += (d*yd)*float(I),
// q6k8z's operations in its order (Z28 the weights' d), F in the float
// sums' row at R15 (moved on a row each).
func q6kAMXFloat(a *asm, m0 int) {
	var base string
	for r := 0; r < 8; r++ {
		m := m0 + r
		if r%4 == 0 {
			base = rowBase(a, "R13", "R11", m/4)
		}
		i := z(m % 16)
		a.op("VBROADCASTSS %s, Z30", act(0, base, r%4))
		a.op("VMOVAPS (R15), Z24")
		a.op("VMULPS Z30, Z28, Z31")
		a.op("VCVTDQ2PS %s, %s", i, i)
		a.op("VFMADD231PS %s, Z31, Z24", i)
		a.op("VMOVAPS Z24, (R15)")
		a.op("ADDQ $64, R15")
	}
}

// amxTiles2 runs a block's tile products for both groups of 16
// activation rows (the second from BX = R12 + 16*R11), B tiles hi and lo
// of chunk c at bt+2048c and 1024 on, and stores the C tiles from ct: hi
// and lo of rows 0-15, then of rows 16-31. loUnsigned multiplies the lo
// tiles as unsigned bytes (TDPBSUD).
func amxTiles2(a *asm, bt, ct int, loUnsigned bool) {
	for _, t := range []int{3, 4, 6, 7} {
		amxBytes(a, fmt.Sprintf("TILEZERO TMM%d", t), amxZero(t))
	}
	a.op("LEAQ (R12)(R11*8), BX")
	a.op("LEAQ (BX)(R11*8), BX")
	lo, loName := amxDot, "TDPBSSD"
	if loUnsigned {
		lo, loName = amxDotSU, "TDPBSUD"
	}
	for c := 0; c < 4; c++ {
		b := bt + 2048*c
		amxBytes(a, fmt.Sprintf("TILELOADD %d(DX)(R9*1), TMM1", b), amxTile(false, 1, b, "DX", "R9"))
		amxBytes(a, fmt.Sprintf("TILELOADD %d(DX)(R9*1), TMM2", b+1024), amxTile(false, 2, b+1024, "DX", "R9"))
		amxBytes(a, fmt.Sprintf("TILELOADD %d(R12)(R11*1), TMM0", 64*c), amxTile(false, 0, 64*c, "R12", "R11"))
		amxBytes(a, fmt.Sprintf("TILELOADD %d(BX)(R11*1), TMM5", 64*c), amxTile(false, 5, 64*c, "BX", "R11"))
		amxBytes(a, "TDPBSSD TMM1, TMM0, TMM3", amxDot(3, 0, 1))
		amxBytes(a, loName+" TMM2, TMM0, TMM4", lo(4, 0, 2))
		amxBytes(a, "TDPBSSD TMM1, TMM5, TMM6", amxDot(6, 5, 1))
		amxBytes(a, loName+" TMM2, TMM5, TMM7", lo(7, 5, 2))
	}
	for i, t := range []int{3, 4, 6, 7} {
		off := ct + 1024*i
		amxBytes(a, fmt.Sprintf("TILESTORED TMM%d, %d(DX)(R9*1)", t, off), amxTile(true, t, off, "DX", "R9"))
	}
}

// amxDotSU encodes TDPBSUD dst, a, b (signed bytes of a, unsigned of b):
// VEX.128.F3.0F38.W0 5E.
func amxDotSU(dst, ta, tb int) []byte {
	return []byte{0xc4, 0xe2, byte(^tb&15)<<3 | 2, 0x5e, 0xc0 | byte(dst)<<3 | byte(ta)}
}
