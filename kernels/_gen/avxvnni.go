package main

import "fmt"

// The AVX-VNNI packed kernels (packk_avxvnni_amd64.s): the AVX2 kernels
// (same packed layout, one group of 8 rows per step, YMM registers) with
// each VPMADDUBSW + VPMADDWD product replaced by the VEX-encoded VPDPBUSD
// of AVX-VNNI (Intel client CPUs from Alder Lake, AMD from Zen 5), which
// sums four u8*s8 products into a 32-bit lane without the 16-bit
// intermediate. The integer sums are exact, as the AVX2 kernels' are for
// every input the activation quantizers make (int8 in [-127, 127]: no
// VPMADDUBSW pair sum reaches 2^15), and the float steps are the AVX2
// kernels' lane for lane, so each result has the AVX2 tier's bits.
//
// Go's assembler knows only the EVEX form of VPDPBUSD, which needs
// AVX-512 VNNI + VL; the VEX form is emitted as bytes (vpdpbusd), with
// the registers-only encoding (the activations are broadcast into a
// register first, as the AVX2 kernels do).

// vpdpbusd emits VEX.256.66.0F38.W0 50 /r, VPDPBUSD dst, v, rm in Intel
// order (Go order: rm, v, dst): dst += the four products of the unsigned
// bytes of v with the signed bytes of rm, per dword. Registers Y0-Y15.
func vpdpbusd(a *asm, rm, v, dst int) {
	for _, r := range []int{rm, v, dst} {
		if r < 0 || r > 15 {
			panic(fmt.Sprintf("vpdpbusd: Y%d is not VEX-encodable", r))
		}
	}
	b1 := byte(0x02) // map 0F38
	if dst < 8 {
		b1 |= 0x80 // VEX.R inverted
	}
	b1 |= 0x40 // VEX.X inverted (no index)
	if rm < 8 {
		b1 |= 0x20 // VEX.B inverted
	}
	b2 := byte(^v&15)<<3 | 0x04 | 0x01 // W0, vvvv inverted, L=256, pp=66
	modrm := byte(0xc0 | (dst&7)<<3 | rm&7)
	a.op("BYTE $0xc4; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x50; BYTE $0x%02x // VPDPBUSD Y%d, Y%d, Y%d", b1, b2, modrm, rm, v, dst)
}

func avxvnniFile() *asm {
	k := &asm{}
	k.b.WriteString(header)
	kConstants(k)
	// vnkdJ: the scale of sub-block J (of 4) of each row as an int32.
	for j := 0; j < 4; j++ {
		k.data(fmt.Sprintf("vnkd%d", j), lanes(func(i int) byte {
			if i%4 != 0 {
				return 0x80
			}
			return byte(i + j)
		}))
	}
	k.data("vnk80", splat(0x80))
	q4kVNNI(k, 1)
	q4kVNNI(k, 4)
	q6kVNNI(k, 1)
	q6kVNNI(k, 4)
	for _, four := range []bool{true, false} {
		q8VNNI(k, four, 1)
		q8VNNI(k, four, 4)
	}
	vnniProbe(k)
	return k
}

// vnniProbe: func vnniProbe(out *[16][8]int32, u, s, c *[8]int32) runs
// the VEX VPDPBUSD once with each register Yi as the destination,
// Y(i+5) the unsigned and Y(i+11) the signed operand (mod 16), c the
// initial sums, storing Yi into out[i]: a test checks every register
// field of the encoding on a CPU that has AVX-VNNI.
func vnniProbe(a *asm) {
	a.raw("// func vnniProbe(out *[16][8]int32, u, s, c *[8]int32)")
	a.raw("TEXT ·vnniProbe(SB), NOSPLIT, $0-32")
	a.op("MOVQ out+0(FP), DI")
	a.op("MOVQ u+8(FP), SI")
	a.op("MOVQ s+16(FP), DX")
	a.op("MOVQ c+24(FP), CX")
	for i := 0; i < 16; i++ {
		v, s := (i+5)%16, (i+11)%16
		a.op("VMOVDQU (SI), %s", y(v))
		a.op("VMOVDQU (DX), %s", y(s))
		a.op("VMOVDQU (CX), %s", y(i))
		vpdpbusd(a, s, v, i)
		a.op("VMOVDQU %s, %d(DI)", y(i), 32*i)
	}
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// Q4_K, A activation rows (1 or 4), as q4k. Stack: 0-255 the eight
// sub-block scales (int32 per row), 256-383 the four min pair vectors
// (int16 pairs). Registers: Y9 0x0f, Y12+r the float sums of row r, Y4+r
// its integer sums of the block; A = 1: Y0-Y3 the sums of the low
// (Y0/Y1: even/odd loads) and high (Y2/Y3) nibbles of the chunk in
// progress, Y5/Y6 the nibbles, Y10/Y11 activations; A = 4: Y0+r row r's
// sums of the sub-block in progress (one chain per row: splitting it in
// two, with the float sums on the stack, measured 10-15% slower on Zen
// 5), Y8 the nibbles.
func q4kVNNI(a *asm, A int) {
	l := q4kBlockHead(a, A, "q4kPackVecAVXVNNI", "q4kPackVec4AVXVNNI", "q4kv", "vnkd")
	for c := 0; c < 4; c++ {
		if A == 1 {
			q4kChunkVNNI1(a, c)
		} else {
			q4kChunkVNNI4(a, c)
		}
	}
	q4kMins(a, A)
	// F += (d*yd)*float(I); F -= (dmin*yd)*float(M), as q4k.
	a.op("VCVTPH2PS (SI), Y8")
	a.op("VCVTPH2PS 16(SI), Y9")
	for r := 0; r < A; r++ {
		f := y(12 + r)
		a.op("VBROADCASTSS %s, Y10", act(0, "R13", r))
		a.op("VMULPS Y10, Y8, Y11")
		a.op("VCVTDQ2PS %s, %s", y(4+r), y(4+r))
		a.op("VFMADD231PS %s, Y11, %s", y(4+r), f)
		a.op("VMULPS Y10, Y9, Y11")
		a.op("VCVTDQ2PS %s, %s", y(r), y(r))
		a.op("VFNMADD231PS %s, Y11, %s", y(r), f)
	}
	a.op("VMOVDQU pk0f<>(SB), Y9")
	a.op("ADDQ $1152, SI")
	a.op("ADDQ $256, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $16, AX")
	a.op("DECQ DX")
	a.op("JNZ %s", l("block"))
	storeGroup(a, A)
	a.op("DECQ CX")
	a.op("JNZ %s", l("group"))
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// q4kChunkVNNI1: chunk c (sub-blocks 2c and 2c+1) of one activation row
// into Y4.
func q4kChunkVNNI1(a *asm, c int) {
	for r := 0; r < 4; r++ {
		a.op("VPXOR %s, %s, %s", y(r), y(r), y(r))
	}
	for p := 0; p < 256; p += 64 {
		a.op("PREFETCHT0 %d(SI)", 2048+128+256*c+p)
	}
	for k := 0; k < 8; k++ {
		a.op("VMOVDQU %d(SI), Y5", 128+256*c+32*k)
		a.op("VPSRLW $4, Y5, Y6")
		a.op("VPAND Y9, Y5, Y5")
		a.op("VPAND Y9, Y6, Y6")
		a.op("VPBROADCASTD %d(R12), Y10", 64*c+4*k)
		a.op("VPBROADCASTD %d(R12), Y11", 64*c+32+4*k)
		vpdpbusd(a, 10, 5, k%2)
		vpdpbusd(a, 11, 6, 2+k%2)
	}
	for h := 0; h < 2; h++ {
		e, o := y(2*h), y(2*h+1)
		a.op("VPADDD %s, %s, %s", o, e, e)
		a.op("VPMULLD %d(SP), %s, %s", 32*(2*c+h), e, e)
		a.op("VPADDD %s, Y4, Y4", e)
	}
}

// q4kChunkVNNI4: chunk c of four activation rows, one sub-block (low,
// then high nibbles) at a time, into Y4+r.
func q4kChunkVNNI4(a *asm, c int) {
	for h := 0; h < 2; h++ {
		for r := 0; r < 4; r++ {
			a.op("VPXOR %s, %s, %s", y(r), y(r), y(r))
		}
		for k := 0; k < 8; k++ {
			w := 128 + 256*c + 32*k
			if h == 0 {
				a.op("VPAND %d(SI), Y9, Y8", w)
			} else {
				a.op("VMOVDQU %d(SI), Y8", w)
				a.op("VPSRLW $4, Y8, Y8")
				a.op("VPAND Y9, Y8, Y8")
			}
			for r := 0; r < 4; r++ {
				t := 10 + r%2
				a.op("VPBROADCASTD %s, %s", act(64*c+32*h+4*k, "R12", r), y(t))
				vpdpbusd(a, t, 8, r)
			}
		}
		for r := 0; r < 4; r++ {
			a.op("VPMULLD %d(SP), %s, %s", 32*(2*c+h), y(r), y(r))
			a.op("VPADDD %s, %s, %s", y(r), y(4+r), y(4+r))
		}
	}
}

// Q6_K, A activation rows (1 or 4), as q6k: the 6-bit quants q enter
// VPDPBUSD unsigned, summed in 32 bits over the 16 elements of one scale,
// then times that scale (VPMULLD); the offset -32 is applied once per
// super-block. Registers: Y0+r the integer sums of the super-block for
// row r; Y8/Y9 two unpacked loads, Y10/Y11 activations, Y12 0x0f, Y13
// scratch, Y14/Y15 the int32 scales of the two sub-blocks in progress;
// A = 1: Y4 the float sums, Y1/Y2 the sums of the sub-block in progress;
// A = 4: Y4+r the sums of row r's sub-block in progress and the float
// sums on the stack (0-127).
func q6kVNNI(a *asm, A int) {
	name := "q6kPackVecAVXVNNI"
	frame := 0
	if A == 4 {
		name = "q6kPackVec4AVXVNNI"
		frame = 128
	}
	l := fmt.Sprintf("q6kv%d", A)
	prologue(a, name, l, A, frame, 256, 260, 4)
	if A == 4 {
		for r := 0; r < 4; r++ {
			a.op("VMOVUPS Y4, %d(SP)", 32*r)
		}
	}
	a.op("VMOVDQU pk0f<>(SB), Y12")
	a.label(l + "block")
	for r := 0; r < A; r++ {
		a.op("VPXOR %s, %s, %s", y(r), y(r), y(r))
	}
	for n := 0; n < 2; n++ {
		if A == 1 {
			for p := 0; p < 1680/2; p += 64 {
				a.op("PREFETCHT0 %d(SI)", 2048+840*n+p)
			}
		}
		for t := 0; t < 4; t++ {
			p := 4*n + t
			a.op("VPMOVSXBW %d(SI), Y13", 1536+16*p)
			a.op("VPSLLD $16, Y13, Y14")
			a.op("VPSRAD $16, Y14, Y14")
			a.op("VPSRAD $16, Y13, Y15")
			for h := 0; h < 2; h++ {
				// acc(r, j): the sums of row r's load j (of 2).
				acc := func(r, j int) int { return 4 + r }
				zero := []int{4, 5, 6, 7}
				if A == 1 {
					acc = func(r, j int) int { return 1 + j }
					zero = []int{1, 2}
				}
				for _, r := range zero {
					a.op("VPXOR %s, %s, %s", y(r), y(r), y(r))
				}
				for m := 0; m < 2; m++ {
					k := 4*h + 2*m
					q6kUnpack(a, "Y8", n, t, k)
					q6kUnpack(a, "Y9", n, t, k+1)
					for r := 0; r < A; r++ {
						off := 128*n + 32*t + 4*k
						a.op("VPBROADCASTD %s, Y10", act(off, "R12", r))
						vpdpbusd(a, 10, 8, acc(r, 0))
						a.op("VPBROADCASTD %s, Y11", act(off+4, "R12", r))
						vpdpbusd(a, 11, 9, acc(r, 1))
					}
				}
				if A == 1 {
					a.op("VPADDD Y2, Y1, Y1")
					a.op("VPMULLD %s, Y1, Y1", y(14+h))
					a.op("VPADDD Y1, Y0, Y0")
					continue
				}
				for r := 0; r < A; r++ {
					a.op("VPMULLD %s, %s, %s", y(14+h), y(4+r), y(4+r))
					a.op("VPADDD %s, %s, %s", y(4+r), y(r), y(r))
				}
			}
		}
	}
	q6kOffset(a, A)
	a.op("VCVTPH2PS 1664(SI), Y13")
	if A == 1 {
		floatStep(a, A, 0, 4, "Y13")
	} else {
		floatStepStack(a, A, 0, 4, 0, "Y13")
	}
	a.op("ADDQ $1680, SI")
	a.op("ADDQ $256, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $32, AX")
	if A == 1 {
		epilogue(a, l, A, 4)
		return
	}
	epilogueStack(a, l, A, 4, 0)
}

// floatStepStack is floatStep with the float sums of row a at sp+32a of
// the stack (loaded into Y(f+a) and stored back).
func floatStepStack(a *asm, A, i, f, sp int, dreg string) {
	for r := 0; r < A; r++ {
		t := y(10 + r%2)
		a.op("VCVTDQ2PS %s, %s", y(i+r), y(i+r))
		a.op("VBROADCASTSS %s, %s", act(0, "R13", r), t)
		a.op("VMULPS %s, %s, %s", t, dreg, t)
		a.op("VMOVUPS %d(SP), %s", sp+32*r, y(f+r))
		a.op("VFMADD231PS %s, %s, %s", y(i+r), t, y(f+r))
		a.op("VMOVUPS %s, %d(SP)", y(f+r), sp+32*r)
	}
}

// epilogueStack is epilogue with the float sums on the stack (at sp,
// loaded into Y(f+a) to be stored, then zeroed for the next group).
func epilogueStack(a *asm, l string, A, f, sp int) {
	a.op("DECQ DX")
	a.op("JNZ %sblock", l)
	for r := 0; r < A; r++ {
		a.op("VMOVUPS %d(SP), %s", sp+32*r, y(f+r))
	}
	a.op("VMOVUPS %s, (DI)", y(f))
	a.op("VMOVUPS %s, (DI)(R8*1)", y(f+1))
	a.op("VMOVUPS %s, (DI)(R8*2)", y(f+2))
	a.op("VMOVUPS %s, (DI)(R9*1)", y(f+3))
	a.op("ADDQ $32, DI")
	a.op("DECQ CX")
	a.op("JNZ %sgroup", l)
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// Q4_0 and Q8_0 (q8a activations: quants at x, d at x+64nb, -8*sum at
// x+68nb), as q8. Q4_0: the nibbles enter VPDPBUSD unsigned and the
// offset 8 is the -8*sum term. Q8_0: the signed weights enter as w+128
// (XOR 0x80) and 128*sum (16 times the -8*sum term) is taken off.
// Registers: Y0+r the integer sums of row r (Q8_0: of the even loads,
// Y12+r of the odd ones; Q4_0 with two chains measured slower on Zen 5),
// Y4+r the float sums, Y8 weights, then their d; Y9 0x0f or 0x80 bytes,
// Y10/Y11 activations.
func q8VNNI(a *asm, four bool, A int) {
	typ, gb := "q8_0", 272
	if four {
		typ, gb = "q4_0", 144
	}
	name := typ + "PackVecAVXVNNI"
	if A == 4 {
		name = typ + "PackVec4AVXVNNI"
	}
	l := fmt.Sprintf("%sv%d", typ, A)
	prologue(a, name, l, A, 0, 64, 68, 4)
	if four {
		a.op("VMOVDQU pk0f<>(SB), Y9")
	} else {
		a.op("VMOVDQU vnk80<>(SB), Y9")
	}
	a.label(l + "block")
	if A == 1 {
		a.op("PREFETCHT0 %d(SI)", 1024)
		a.op("PREFETCHT0 %d(SI)", 1024+64)
		a.op("PREFETCHT0 %d(SI)", 1024+128)
		if !four {
			a.op("PREFETCHT0 %d(SI)", 1024+192)
			a.op("PREFETCHT0 %d(SI)", 1024+256)
		}
	}
	for r := 0; r < A; r++ {
		a.op("VPXOR %s, %s, %s", y(r), y(r), y(r))
		if !four {
			a.op("VPXOR %s, %s, %s", y(12+r), y(12+r), y(12+r))
		}
	}
	if four {
		for k := 0; k < 4; k++ {
			for h := 0; h < 2; h++ {
				if h == 0 {
					a.op("VPAND %d(SI), Y9, Y8", 32*k)
				} else {
					a.op("VMOVDQU %d(SI), Y8", 32*k)
					a.op("VPSRLW $4, Y8, Y8")
					a.op("VPAND Y9, Y8, Y8")
				}
				for r := 0; r < A; r++ {
					t := 10 + r%2
					a.op("VPBROADCASTD %s, %s", act(16*h+4*k, "R12", r), y(t))
					vpdpbusd(a, t, 8, r)
				}
			}
		}
	} else {
		for k := 0; k < 8; k++ {
			a.op("VPXOR %d(SI), Y9, Y8", 32*k)
			for r := 0; r < A; r++ {
				t := 10 + r%2
				a.op("VPBROADCASTD %s, %s", act(4*k, "R12", r), y(t))
				vpdpbusd(a, t, 8, 12*(k%2)+r)
			}
		}
	}
	for r := 0; r < A; r++ {
		t := y(10 + r%2)
		if !four {
			a.op("VPADDD %s, %s, %s", y(12+r), y(r), y(r))
		}
		a.op("VPBROADCASTD %s, %s", act(0, "AX", r), t)
		if !four {
			a.op("VPSLLD $4, %s, %s", t, t)
		}
		a.op("VPADDD %s, %s, %s", t, y(r), y(r))
	}
	a.op("VCVTPH2PS %d(SI), Y8", gb-16)
	floatStep(a, A, 0, 4, "Y8")
	a.op("ADDQ $%d, SI", gb)
	a.op("ADDQ $32, R12")
	a.op("ADDQ $4, R13")
	a.op("ADDQ $4, AX")
	epilogue(a, l, A, 4)
}
