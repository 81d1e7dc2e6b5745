package main

import (
	"fmt"
	"strings"
)

func init() { files["q8a_neon_arm64.s"] = q8aNFile }

// The arm64 Q8_0 and Q4_0 kernels (kernels/q8a_neon_arm64.s): weights
// times activations in the q8a layout (actlayout.go: the int8 quants of
// the nb blocks of 32 at x, their float d at x + 64*nb), for the neon and
// dotprod tiers, with one or four activation rows. q8aNDoc heads the file
// and explains the algorithm and the registers: blocks four at a time,
// each block's exact integer dot product in 4 int32 lanes (a DOT32
// macro, see q8aNDots), reduced pairwise to one vector of block sums
// times (dw*dx) into float lanes, the blocks%4 left into a scalar.
//
// The generator writes the per-block sequences as #define macros of the
// .s, built here from loops (q8aNDots, q8aNLoads, q8aNBlockMacros), and
// then the eight kernels (q8aNKernel): two weight types x two tiers x one
// or four rows, the four-row kernels repeating each step per row with the
// registers of q8aNFour. The encodings of the instructions the Go
// assembler lacks (MOVI0, SDOT_4S, SMULL_8H, ...) come from neon_arm64.h.
const q8aNDoc = `// Q8_0 and Q4_0 weights times activations in the q8a layout (see
// actlayout.go), for the neon and dotprod tiers. Blocks are taken four at
// a time: each block's exact integer dot product is formed in 4 int32
// lanes (DOT32_*), the four blocks' lanes are reduced pairwise to one
// vector of four block sums, and float lane j accumulates
// (dw_j*dx_j) * sum_j with one FMA. The last blocks%4 blocks add
// (dw*dx) * sum into a scalar with FMADD. A row's result is
// ((a0+a1)+(a2+a3)) + scalar. The 4-row kernels load each weight block
// once and run the same sequence per activation row, so their results are
// bit-identical to the one-row kernels'. The neon and dotprod variants
// differ only in the DOT32 macro; the integer sums are exact in both.
//
// Registers: weights V0-V7 (four blocks; Q4_0 unpacked to q-8 in [-8, 7]),
// their fp16 scales V16 (widened to float), activation quants V8-V11,
// block sums V20-V23, V24-V25 pairwise sums, V17 the scale product,
// V26-V27 scratch of the neon dot, V28 = 0x0f and V29 = 8 bytes (Q4_0).
`

// q8aNTypes are the two weight types, in the order of the file: the name
// prefix of the kernels, the macro suffix, and the quant bytes of a block
// (Q8_0: 32 int8; Q4_0: 16 bytes of two nibbles).
var q8aNTypes = []struct {
	name, mac string
	qbytes    int
}{
	{"q8_0", "Q8", 32},
	{"q4_0", "Q4", 16},
}

// q8aNDefine writes "#define head" with the body lines: one line goes on
// the #define's own line, more are continued with backslashes. Each line
// is a list of statements joined by "; ".
func q8aNDefine(a *asm, head string, lines ...[]string) {
	if len(lines) == 1 {
		a.raw("#define %s %s", head, strings.Join(lines[0], "; "))
		return
	}
	a.raw("#define %s \\", head)
	for i, l := range lines {
		s := "\t" + strings.Join(l, "; ")
		if i+1 < len(lines) {
			s += "; \\"
		}
		a.raw("%s", s)
	}
}

// q8aNDots writes the DOT32 macros: D (4 int32 lanes) = A0.X0 + A1.X1,
// 16 int8 each, with V26-V27 as scratch of the neon forms.
//
// The dotprod form is two SDOTs. The neon forms widen products to int16
// with SMULL/SMLAL (low 8 bytes) and SMULL2/SMLAL2 (high 8) and add the
// int16 lanes pairwise into int32 (SADDLP, SADALP). Q8_0 products reach
// 128*127, so an int16 lane may add only two of them: each half (low,
// high) of A0.X0 + A1.X1 gets its own scratch register. Q4_0 products
// are at most 8*127, so all four (both halves of both pairs) share V26.
func q8aNDots(a *asm) {
	a.raw("// DOT32_SDOT: 4 int32 lanes summing to A0.X0 + A1.X1 (16 int8 each).")
	q8aNDefine(a, "DOT32_SDOT(D, A0, A1, X0, X1)",
		[]string{"MOVI0(D)", "SDOT_4S(D, A0, X0)", "SDOT_4S(D, A1, X1)"})
	a.raw("")
	pairs := [2][2]string{{"A0", "X0"}, {"A1", "X1"}}
	half := [2]string{"", "2"} // SMULL/SMLAL: low 8 bytes; ...2: high 8
	mul := func(op, h string, d int, p [2]string) string {
		return fmt.Sprintf("%s%s_8H(%d, %s, %s)", op, h, d, p[0], p[1])
	}

	var q8 []string
	for h := range half {
		for i, p := range pairs {
			op := "SMLAL"
			if i == 0 {
				op = "SMULL"
			}
			q8 = append(q8, mul(op, half[h], 26+h, p))
		}
	}
	q8 = append(q8, "SADDLP_4S(D, 26)", "SADALP_4S(D, 27)")
	a.raw("// DOT32_Q8_NEON: the same with widening multiplies; Q8_0 products reach")
	a.raw("// 128*127, so each int16 lane adds only two of them.")
	q8aNDefine(a, "DOT32_Q8_NEON(D, A0, A1, X0, X1)", q8)
	a.raw("")

	var q4 []string
	for i, p := range pairs {
		for h := range half {
			op := "SMLAL"
			if i == 0 && h == 0 {
				op = "SMULL"
			}
			q4 = append(q4, mul(op, half[h], 26, p))
		}
	}
	q4 = append(q4, "SADDLP_4S(D, 26)")
	a.raw("// DOT32_Q4_NEON: Q4_0 products are at most 8*127, four per int16 lane.")
	q8aNDefine(a, "DOT32_Q4_NEON(D, A0, A1, X0, X1)", q4)
	a.raw("")
}

// q8aNLoadBlock returns the loads of weight block b (of four) of a type
// with qbytes quant bytes: its fp16 scale into lane b of V16, its quants
// into V(2b) (and V(2b+1) for Q8_0; Q4_0 fills that by unpacking), R9
// post-incremented past both.
func q8aNLoadBlock(b, qbytes int) []string {
	regs := fmt.Sprintf("V%d.B16", 2*b)
	if qbytes == 32 {
		regs += fmt.Sprintf(", V%d.B16", 2*b+1)
	}
	return []string{
		fmt.Sprintf("VLD1.P 2(R9), V16.H[%d]", b),
		fmt.Sprintf("VLD1.P %d(R9), [%s]", qbytes, regs),
	}
}

// q8aNUnpack returns the unpacking of the Q4_0 block loaded into V(2b):
// low nibbles - 8 (elements 0-15) stay there, high nibbles - 8 (16-31)
// go to V(2b+1).
func q8aNUnpack(b int) string { return fmt.Sprintf("UNPACK_Q4(V%d, V%d)", 2*b, 2*b+1) }

// q8aNLoads writes the weight loaders: UNPACK_Q4, and per type LOADW4_*
// (four blocks into V0-V7, scales as floats into V16) and LOADW1_* (one
// block into V0-V1, its scale into F16).
func q8aNLoads(a *asm) {
	for _, t := range q8aNTypes {
		var l4 [][]string
		for b := 0; b < 4; b++ {
			l4 = append(l4, q8aNLoadBlock(b, t.qbytes))
		}
		if t.qbytes == 16 {
			a.raw("// UNPACK_Q4: lo = (lo & 15) - 8 (elements 0-15), hi = (lo >> 4) - 8")
			a.raw("// (elements 16-31).")
			q8aNDefine(a, "UNPACK_Q4(lo, hi)",
				[]string{"VUSHR $4, lo.B16, hi.B16"},
				[]string{"VAND  V28.B16, lo.B16, lo.B16"},
				[]string{"VSUB  V29.B16, lo.B16, lo.B16"},
				[]string{"VSUB  V29.B16, hi.B16, hi.B16"})
			a.raw("")
			var un []string
			for b := 0; b < 4; b++ {
				un = append(un, q8aNUnpack(b))
			}
			l4 = append(l4, un)
		} else {
			a.raw("// LOADW4_%s: four %s blocks at R9 (advanced past them) into V0-V7 and", t.mac, strings.ToUpper(t.name))
			a.raw("// their scales, as floats, into V16.")
		}
		l4 = append(l4, []string{"FCVTL_4S(16, 16)"})
		q8aNDefine(a, "LOADW4_"+t.mac, l4...)
		a.raw("")
	}
	a.raw("// LOADW1_*: one block into V0-V1, its scale as a float into F16.")
	for _, t := range q8aNTypes {
		l1 := q8aNLoadBlock(0, t.qbytes)
		if t.qbytes == 16 {
			l1 = append(l1, q8aNUnpack(0))
		}
		q8aNDefine(a, "LOADW1_"+t.mac, append(l1, "FCVTHS F16, F16"))
	}
	a.raw("")
}

// q8aNBlockMacros writes GROUP and TAIL1, the per-row step of the group
// loop and the tail loop. GROUP reads the 128 quants of the four blocks
// in two loads of 64 (blocks 0-1, then 2-3), forms the block sums
// V20-V23, reduces them pairwise (VADDP: V24 = the sums of blocks 0, 1
// pairwise, V25 of 2, 3, then V24 = one sum per block, in block order),
// converts to float and accumulates sum_j * (dw_j*dx_j) into lane j of
// ACC. TAIL1 does the same for one block, reducing across lanes (VADDV)
// and accumulating into a scalar with FMADDS.
func q8aNBlockMacros(a *asm) {
	a.raw("// GROUP: the four loaded blocks times the activations at XP (quants) and")
	a.raw("// DP (float d), both advanced, into the float lanes of ACC.")
	var g [][]string
	for h := 0; h < 2; h++ {
		g = append(g, []string{"VLD1.P 64(XP), [V8.B16, V9.B16, V10.B16, V11.B16]"})
		for k := 0; k < 2; k++ {
			b := 2*h + k
			g = append(g, []string{fmt.Sprintf("DOT(%d, %d, %d, %d, %d)", 20+b, 2*b, 2*b+1, 8+2*k, 9+2*k)})
		}
	}
	for _, s := range [][3]int{{21, 20, 24}, {23, 22, 25}, {25, 24, 24}} {
		g = append(g, []string{fmt.Sprintf("VADDP V%d.S4, V%d.S4, V%d.S4", s[0], s[1], s[2])})
	}
	g = append(g,
		[]string{"SCVTF_4S(24, 24)"},
		[]string{"VLD1.P 16(DP), [V17.S4]"},
		[]string{"FMUL_4S(17, 16, 17)"},
		[]string{"VFMLA V24.S4, V17.S4, ACC.S4"})
	q8aNDefine(a, "GROUP(DOT, XP, DP, ACC)", g...)
	a.raw("")
	a.raw("// TAIL1: the one loaded block times the activations at XP, DP into the")
	a.raw("// scalar TACC.")
	q8aNDefine(a, "TAIL1(DOT, XP, DP, TACC)",
		[]string{"VLD1.P 32(XP), [V8.B16, V9.B16]"},
		[]string{"DOT(20, 0, 1, 8, 9)"},
		[]string{"VADDV V20.S4, V20"},
		[]string{"SCVTF_S(20, 20)"},
		[]string{"FMOVS.P 4(DP), F17"},
		[]string{"FMULS F16, F17, F17"},
		[]string{"FMADDS F17, TACC, F20, TACC"})
	a.raw("")
}

// q8aNRegs are the registers of a kernel with len(xp) activation rows:
// per row the quant pointer, d pointer, float vector and scalar sums;
// the registers of the group count, the tail count and the loop counter.
type q8aNRegs struct {
	xp, dp, acc, tacc  []int
	groups, rem, count int
	sig, frame         string
}

// q8aNOne: one row. R0 out (post-incremented), R1 rows left, R2 weight
// row, R3 its stride, R4 blocks, R5/R6 the activation quants and d.
var q8aNOne = q8aNRegs{
	xp: []int{10}, dp: []int{11}, acc: []int{31}, tacc: []int{30},
	groups: 7, rem: 8, count: 12,
	sig:   "(out []float32, w []byte, stride, blocks int, x []byte)",
	frame: "$0-88",
}

// q8aNFour: four rows. R0 out, R1 the output row stride in bytes, R2/R3
// weight row and stride, R4 rows left, R5 blocks, R8/R10/R11/R12 the four
// activation rows (xstride apart), R13 the output address of rows 1-3.
var q8aNFour = q8aNRegs{
	xp: []int{15, 16, 17, 19}, dp: []int{20, 21, 22, 23},
	acc: []int{12, 13, 14, 15}, tacc: []int{18, 19, 30, 31},
	groups: 6, rem: 7, count: 14,
	sig:   "(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)",
	frame: "$0-112",
}

// q8aNFourX are the activation row bases of the four-row kernels.
var q8aNFourX = []int{8, 10, 11, 12}

// q8aNKernel writes one kernel: weight type t, DOT32 macro dot, name
// suffix tier, one or four rows (r). Per output row (weight row, R2 + k*R3)
// it runs the group loop over blocks/4 groups of four blocks, then the
// tail loop over the blocks%4 left, then stores ((a0+a1)+(a2+a3)) +
// scalar (HSUM4 adds the lanes in that order).
func q8aNKernel(a *asm, tname, mac, dot, tier string, r q8aNRegs) {
	rows := len(r.xp)
	name := tname + "Vec" + tier
	if rows == 4 {
		name = tname + "Vec4" + tier
	}
	tiers := map[string]string{"NEON": "neon (widening multiplies)", "Dot": "dotprod (SDOT)"}
	a.raw("// %s: %s weights, %d activation row(s), %s tier.", name, strings.ToUpper(tname), rows, tiers[tier])
	a.raw("// func %s%s", name, r.sig)
	a.raw("TEXT ·%s(SB), NOSPLIT, %s", name, r.frame)
	a.op("MOVD out_base+0(FP), R0")
	if rows == 1 {
		a.op("MOVD out_len+8(FP), R1")
		a.op("MOVD w_base+24(FP), R2")
		a.op("MOVD stride+48(FP), R3")
		a.op("MOVD blocks+56(FP), R4")
		a.op("MOVD x_base+64(FP), R5")
		a.op("ADD R4<<6, R5, R6 // the d of the blocks")
		a.op("LSR $2, R4, R%d // groups of four blocks", r.groups)
		a.op("AND $3, R4, R%d // remaining blocks", r.rem)
	} else {
		a.op("MOVD ostride+24(FP), R1")
		a.op("LSL $2, R1")
		a.op("MOVD w_base+32(FP), R2")
		a.op("MOVD stride+56(FP), R3")
		a.op("MOVD rows+64(FP), R4")
		a.op("MOVD blocks+72(FP), R5")
		a.op("MOVD x_base+80(FP), R%d", q8aNFourX[0])
		a.op("MOVD xstride+104(FP), R7")
		for i := 1; i < rows; i++ {
			a.op("ADD R7, R%d, R%d", q8aNFourX[i-1], q8aNFourX[i])
		}
		a.op("LSR $2, R5, R%d", r.groups)
		a.op("AND $3, R5, R%d", r.rem)
	}
	if mac == "Q4" {
		a.op("VMOVI $15, V28.B16")
		a.op("VMOVI $8, V29.B16")
	}

	a.raw("")
	a.label("row")
	a.op("MOVD R2, R9")
	if rows == 1 {
		a.op("MOVD R5, R%d", r.xp[0])
		a.op("MOVD R6, R%d", r.dp[0])
	} else {
		for i, x := range q8aNFourX {
			a.op("MOVD R%d, R%d", x, r.xp[i])
		}
		for i, x := range q8aNFourX {
			a.op("ADD R5<<6, R%d, R%d", x, r.dp[i])
		}
	}
	for _, v := range append(append([]int{}, r.acc...), r.tacc...) {
		a.op("MOVI0(%d)", v)
	}
	a.op("CBZ R%d, tail", r.groups)
	a.op("MOVD R%d, R%d", r.groups, r.count)

	a.raw("")
	a.label("group")
	a.op("LOADW4_%s", mac)
	for i := range r.xp {
		a.op("GROUP(%s, R%d, R%d, V%d)", dot, r.xp[i], r.dp[i], r.acc[i])
	}
	a.op("SUBS $1, R%d", r.count)
	a.op("BNE group")

	a.raw("")
	a.label("tail")
	a.op("CBZ R%d, done", r.rem)
	a.op("MOVD R%d, R%d", r.rem, r.count)

	a.raw("")
	a.label("tail1")
	a.op("LOADW1_%s", mac)
	for i := range r.xp {
		a.op("TAIL1(%s, R%d, R%d, F%d)", dot, r.xp[i], r.dp[i], r.tacc[i])
	}
	a.op("SUBS $1, R%d", r.count)
	a.op("BNE tail1")

	a.raw("")
	a.label("done")
	if rows == 1 {
		acc, tacc := r.acc[0], r.tacc[0]
		a.op("HSUM4(%d)", acc)
		a.op("FADDS F%d, F%d, F%d", tacc, acc, acc)
		a.op("FMOVS.P F%d, 4(R0)", acc)
		a.op("ADD R3, R2")
		a.op("SUBS $1, R1")
	} else {
		// Row i's result goes to R0 + i*R1 (R13 walks rows 1-3).
		for i := range r.xp {
			acc, tacc := r.acc[i], r.tacc[i]
			a.op("HSUM4(%d)", acc)
			a.op("FADDS F%d, F%d, F%d", tacc, acc, acc)
			switch i {
			case 0:
				a.op("FMOVS F%d, (R0)", acc)
				continue
			case 1:
				a.op("ADD R1, R0, R13")
			default:
				a.op("ADD R1, R13, R13")
			}
			a.op("FMOVS F%d, (R13)", acc)
		}
		a.op("ADD $4, R0")
		a.op("ADD R3, R2")
		a.op("SUBS $1, R4")
	}
	a.op("BNE row")
	a.op("RET")
	a.raw("")
}

// q8aNFile writes q8a_neon_arm64.s: the macros, then per weight type
// (Q8_0, Q4_0) and tier (neon: the type's widening DOT32; dotprod: SDOT)
// the one-row and four-row kernels.
func q8aNFile() *asm {
	a := &asm{}
	a.b.WriteString(neonHeader)
	a.raw("")
	a.b.WriteString(q8aNDoc)
	a.raw("")
	q8aNDots(a)
	q8aNLoads(a)
	q8aNBlockMacros(a)
	for _, t := range q8aNTypes {
		tiers := []struct{ dot, name string }{
			{"DOT32_" + t.mac + "_NEON", "NEON"},
			{"DOT32_SDOT", "Dot"},
		}
		for _, tier := range tiers {
			for _, r := range []q8aNRegs{q8aNOne, q8aNFour} {
				q8aNKernel(a, t.name, t.mac, tier.dot, tier.name, r)
			}
		}
	}
	return a
}
