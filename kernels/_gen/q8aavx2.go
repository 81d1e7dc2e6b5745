package main

import (
	"fmt"
	"strings"
)

func init() { files["q8a_avx2_amd64.s"] = q8aAFile }

// q8aAFile writes q8a_avx2_amd64.s: Q8_0 and Q4_0 weights (plain
// row-major blocks, not packed) times activations in the q8a layout of
// actlayout.go (quants at x, Q4_0's -8*pair sums at x+32nb, d at x+64nb).
//
// Per 32-element block b of a weight row the integer dot product is
// computed exactly as 8 int32 lanes s, and float accumulator b%2 gets
// acc += (dw_b*dx_b) * float(s): one FMA per lane, and two accumulators
// so that consecutive blocks do not wait on each other's FMA latency. The
// row's result is HSUM(acc0+acc1). The one-row kernels prefetch the
// weights 1 KiB ahead (the reason is given in kquant_avx2_amd64.s). The
// four-row kernels run the same sequence per activation row (the same
// operations in the same order, only the scale product lands in X6
// instead of X5), so their results are bit-identical to the one-row
// ones.
//
// The block arithmetic stays in #define macros of the output (one per
// step, built by the helpers below), so the kernels read as loops over
// blocks and rows; the generator builds the macro bodies and the kernels
// from the per-type pieces (q8aAType).
func q8aAFile() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`#include "avx2_amd64.h"

// Q8_0 and Q4_0 weights times activations in the q8a layout (see
// actlayout.go). Per 32-element block b of a row the integer dot product
// is computed exactly as 8 int32 lanes s, and float accumulator b%%2 gets
// acc += (dw_b*dx_b) * float(s) (one FMA per lane; two accumulators hide
// the FMA latency); the row's result is HSUM(acc0+acc1). The one-row
// kernels prefetch the weights 1 KiB ahead (see kquant_avx2_amd64.s). The
// 4-row kernels run the same sequence per activation row, so their
// results are bit-identical.
`)
	q8aAData(a, "ones16", splatU(0x00010001))
	q8aAData(a, "mask0f", splat(0x0f))
	a.raw("// Shift counts of the dwords: 0 in the low lane, 4 in the high one.")
	q8aAData(a, "q4shift", q8aADwords(func(i int) uint32 { return uint32(i / 4 * 4) }))
	q8aAStore4(a)

	q8, q4 := q8aAQ8_0, q8aAQ4_0
	a.raw(`// Q8_0 weights: |w| is the unsigned operand of VPMADDUBSW and x*sign(w)
// the signed one (|x| <= 127, and |w| = 128 fits an unsigned byte).
`)
	q8aABlkMacro(a, q8)
	q8aAVec(a, q8)
	a.raw(`// The 4-row kernels keep the two accumulators of activation row i in
// Y(8+2i), Y(9+2i) and index the activation rows as (R12), (R12)(R11*1),
// (R12)(R11*2), (R12)(R14*1) (R11 = the row stride, R14 = 3*R11).
`)
	q8aALoadMacro(a, q8)
	q8aARowMacro(a, q8)
	q8aABlk4Macro(a, q8)
	q8aAZero8(a)
	q8aAVec4(a, q8)

	a.raw(`// Q4_0 weights: the nibbles q (0..15) are the unsigned operand, so the
// pair sums are q.x; adding -8*(x[2j]+x[2j+1]) (stored with the
// activations) makes them (q-8).x before VPMADDWD widens them.
`)
	q8aALoadMacro(a, q4)
	q8aABlkMacro(a, q4)
	q8aAVec(a, q4)
	q8aARowMacro(a, q4)
	q8aABlk4Macro(a, q4)
	q8aAVec4(a, q4)
	return a
}

// q8aAType is what the Q8_0 and Q4_0 kernels of q8a_avx2_amd64.s do
// differently. A weight block is the fp16 scale dw followed by the quants
// (32 int8 for Q8_0, 16 bytes of nibble pairs for Q4_0).
type q8aAType struct {
	name  string // Go name prefix: q8_0, q4_0
	label string // label prefix: q80, q40
	mac   string // macro prefix: Q8_0, Q4_0
	block int    // bytes per weight block
	// q4: Q4_0, whose products add the activations' -8*pair sums
	// (the corrections, as many bytes per block as the quants).
	q4 bool
}

var (
	q8aAQ8_0 = q8aAType{name: "q8_0", label: "q80", mac: "Q8_0", block: 34}
	q8aAQ4_0 = q8aAType{name: "q4_0", label: "q40", mac: "Q4_0", block: 18, q4: true}
)

// load emits the load of the quants of the block at woff(BX) (woff a
// macro parameter) into the unsigned operand of VPMADDUBSW.
//
// Q8_0: Y2 = w, Y3 = |w|.
//
// Q4_0: Y2 = the 32 nibbles in element order: the 16 quant bytes are
// broadcast to both lanes, the dwords of the high lane shifted right by 4
// (shift = q4shift), and both masked with 0x0f (mask = mask0f), so bytes
// 0-15 are the low nibbles (elements 0-15) and bytes 16-31 the high ones
// (elements 16-31).
func (t q8aAType) load(m *asm, woff, shift, mask string) {
	if !t.q4 {
		m.op("VMOVDQU %s+2(BX), Y2", woff)
		m.op("VPABSB Y2, Y3")
		return
	}
	m.op("VBROADCASTI128 %s+2(BX), Y2", woff)
	m.op("VPSRLVD %s, Y2, Y2", shift)
	m.op("VPAND %s, Y2, Y2", mask)
}

// product emits the 16 int16 pair sums of the loaded block with the 32
// activation quants at xaddr into Y4: Q8_0 multiplies |w| by x*sign(w)
// (VPSIGNB), Q4_0 multiplies q by x and adds the corrections at caddr,
// making the sums (q-8).x (no overflow: |q.x pair| <= 2*15*127 and the
// correction's magnitude is at most 8*2*127).
func (t q8aAType) product(m *asm, xaddr, caddr string) {
	if !t.q4 {
		m.op("VMOVDQU %s, Y4", xaddr)
		m.op("VPSIGNB Y2, Y4, Y4")
		m.op("VPMADDUBSW Y4, Y3, Y4")
		return
	}
	m.op("VPMADDUBSW %s, Y2, Y4", xaddr)
	m.op("VPADDW %s, Y4, Y4", caddr)
}

// params lists a macro's parameters, leaving out the corrections' (named
// c...) for Q8_0.
func (t q8aAType) params(p ...string) string {
	var s []string
	for _, v := range p {
		if v[0] != 'c' || t.q4 {
			s = append(s, v)
		}
	}
	return strings.Join(s, ", ")
}

// q8aAScale emits the tail of a block product shared by all kernels: the
// int16 pairs in Y4 widened to 8 int32 lanes (VPMADDWD with int16 ones,
// from register or memory ones), converted to float and accumulated as
// acc += (dw*dx) * float(s). dw is the low float of X5 (converted from
// the fp16 at half first unless half is empty); the product dw*dx goes to
// Xs and is broadcast to Ys.
func q8aAScale(m *asm, ones, half, daddr string, s int, acc string) {
	m.op("VPMADDWD %s, Y4, Y4", ones)
	m.op("VCVTDQ2PS Y4, Y4")
	if half != "" {
		m.op("VCVTPH2PS %s, X5", half)
	}
	m.op("VMULSS %s, X5, X%d", daddr, s)
	m.op("VBROADCASTSS X%d, Y%d", s, s)
	m.op("VFMADD231PS Y4, Y%d, %s", s, acc)
}

// q8aADefine emits "#define head" whose body is what body emits (one
// instruction or macro call a line, joined with "; \").
func q8aADefine(a *asm, head string, body func(m *asm)) {
	m := &asm{}
	body(m)
	lines := strings.Split(strings.TrimSuffix(m.b.String(), "\n"), "\n")
	a.raw("#define %s \\", head)
	a.raw("%s", strings.Join(lines, "; \\\n"))
	a.raw("")
}

// q8aACall is a macro invocation NAME(args).
func q8aACall(name string, args ...any) string {
	s := make([]string, len(args))
	for i, v := range args {
		s[i] = fmt.Sprint(v)
	}
	return name + "(" + strings.Join(s, ", ") + ")"
}

// q8aAData emits a 32-byte constant like asm.data, but writes zero quads
// as $0.
func q8aAData(a *asm, name string, v [32]byte) {
	for i := 0; i < 32; i += 8 {
		var q uint64
		for j := 7; j >= 0; j-- {
			q = q<<8 | uint64(v[i+j])
		}
		if q == 0 {
			a.raw("DATA %s<>+%d(SB)/8, $0", name, i)
		} else {
			a.raw("DATA %s<>+%d(SB)/8, $0x%016x", name, i, q)
		}
	}
	a.raw("GLOBL %s<>(SB), RODATA|NOPTR, $32\n", name)
}

// q8aADwords builds a 32-byte constant from its 8 dwords f(0..7).
func q8aADwords(f func(i int) uint32) (v [32]byte) {
	for i := 0; i < 8; i++ {
		u := f(i)
		for j := 0; j < 4; j++ {
			v[4*i+j] = byte(u >> (8 * j))
		}
	}
	return
}

// q8aAScaled emits dst = base + n<<shift (n, base registers), with a
// comment naming what dst then points to.
func q8aAScaled(a *asm, n string, shift int, base, dst, what string) {
	a.op("MOVQ %s, %s", n, dst)
	a.op("SHLQ $%d, %s", shift, dst)
	a.op("ADDQ %s, %s // %s", base, dst, what)
}

// q8aARows indexes the four activation rows from a base register: R11 =
// the row stride, R14 = 3*R11.
var q8aARows = [4]string{"", "(R11*1)", "(R11*2)", "(R14*1)"}

// q8aAAcc is the accumulator of activation row r for the blocks of parity
// j in the four-row kernels: Y(8+2r+j).
func q8aAAcc(r, j int) string { return y(8 + 2*r + j) }

// q8aAStore4 emits STORE4, the end of a four-row kernel's weight row: the
// accumulator pairs of the four activation rows added and reduced, and
// the sums stored to out[i*ostride] (DI), i < 4.
func q8aAStore4(a *asm) {
	a.raw(`// STORE4 adds the accumulator pairs and stores the 4 row sums to
// out[i*ostride] (DI), i < 4. Clobbers AX, R9, X0, Y8-Y15.`)
	outs := [4]string{"", "(AX*1)", "(AX*2)", "(R9*1)"}
	q8aADefine(a, "STORE4", func(m *asm) {
		for r := 0; r < 4; r++ {
			m.op("VADDPS %s, %s, %s", q8aAAcc(r, 1), q8aAAcc(r, 0), q8aAAcc(r, 0))
		}
		for r := 0; r < 4; r++ {
			m.op("HSUM(Y%d, X%d, X0)", 8+2*r, 8+2*r)
		}
		m.op("MOVQ ostride+24(FP), AX")
		m.op("SHLQ $2, AX")
		m.op("LEAQ (AX)(AX*2), R9")
		for r := 0; r < 4; r++ {
			m.op("VMOVSS X%d, (DI)%s", 8+2*r, outs[r])
		}
	})
}

// q8aAZero8 emits ZERO8, which clears the eight accumulators Y8-Y15 of a
// four-row kernel.
func q8aAZero8(a *asm) {
	q8aADefine(a, "ZERO8", func(m *asm) {
		for i := 8; i < 16; i++ {
			m.op("VXORPS %s, %s, %s", y(i), y(i), y(i))
		}
	})
}

// q8aABlkMacro emits <T>_BLK, one block of the one-row kernels: acc +=
// dw*dx * (the 8 int32 lanes of the block's dot product) for the weights
// at woff(BX), the activations at xoff(R12), their d at doff(R13) and
// (Q4_0) their corrections at coff(R14). The constants stay in registers:
// Y15 = int16 ones, and for Q4_0 Y13 = q4shift, Y14 = mask0f.
func q8aABlkMacro(a *asm, t q8aAType) {
	if t.q4 {
		a.raw(`// Q4_0_BLK: acc += dw*dx * (8 int32 lanes of (q-8).x). Activations at
// xoff(R12), their pair corrections at coff(R14), d at doff(R13).
// Clobbers Y2, Y4-Y6.`)
	} else {
		a.raw(`// Q8_0_BLK: acc += dw*dx * (8 int32 lanes of w.x) for the block at
// woff(BX) and activations xoff(R12), doff(R13). Clobbers Y2-Y6.`)
	}
	q8aADefine(a, t.mac+"_BLK("+t.params("woff", "xoff", "coff", "doff", "acc")+")", func(m *asm) {
		t.load(m, "woff", "Y13", "Y14")
		t.product(m, "xoff(R12)", "coff(R14)")
		q8aAScale(m, "Y15", "woff(BX)", "doff(R13)", 5, "acc")
	})
}

// q8aAVec emits the one-row kernel of type t:
//
//	func <t>VecAVX2(out []float32, w []byte, stride, blocks int, x []byte)
//
// out[i] = weight row i (at w + i*stride) . the activation row x.
// Registers: DI out, CX rows left, SI the weight row, R8 its stride, R9
// blocks, R10/R11 (Q4_0: AX too) the activations' quants, d (and
// corrections); per row BX, R12, R13 (R14) walk them, DX counts block
// pairs, Y0/Y1 are the two accumulators.
func q8aAVec(a *asm, t q8aAType) {
	name, l := t.name+"VecAVX2", t.label
	a.raw("// func %s(out []float32, w []byte, stride, blocks int, x []byte)", name)
	a.raw("//")
	a.raw("// out[i] = (the weight row at w+i*stride) . x, for i < len(out).")
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-88", name)
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ out_len+8(FP), CX")
	a.op("MOVQ w_base+24(FP), SI")
	a.op("MOVQ stride+48(FP), R8")
	a.op("MOVQ blocks+56(FP), R9")
	a.op("MOVQ x_base+64(FP), R10")
	if t.q4 {
		q8aAScaled(a, "R9", 5, "R10", "AX", "corrections: x + 32*nb")
	}
	q8aAScaled(a, "R9", 6, "R10", "R11", "d: x + 64*nb")
	if t.q4 {
		a.op("VMOVDQU q4shift<>(SB), Y13")
		a.op("VMOVDQU mask0f<>(SB), Y14")
	}
	a.op("VMOVDQU ones16<>(SB), Y15")
	a.raw("")
	a.label(l + "row")
	a.op("MOVQ SI, BX")
	a.op("MOVQ R10, R12")
	a.op("MOVQ R11, R13")
	steps := []q8aAStep{{"BX", 2 * t.block}, {"R12", 64}, {"R13", 8}}
	if t.q4 {
		a.op("MOVQ AX, R14")
		steps = append(steps, q8aAStep{"R14", 64})
	}
	a.op("VXORPS Y0, Y0, Y0")
	a.op("VXORPS Y1, Y1, Y1")
	a.op("MOVQ R9, DX")
	a.op("SHRQ $1, DX")
	blk := func(j int) {
		args := []any{t.block * j, 32 * j, 32 * j, 4 * j, y(j)}
		if !t.q4 {
			args = append(args[:2], args[3:]...)
		}
		a.op("%s", q8aACall(t.mac+"_BLK", args...))
	}
	q8aABlockLoop(a, l, true, blk, steps, func() { a.op("TESTQ $1, R9") })
	a.op("VADDPS Y1, Y0, Y0")
	a.op("HSUM(Y0, X0, X1)")
	a.op("VMOVSS X0, (DI)")
	a.op("ADDQ $4, DI")
	a.op("ADDQ R8, SI")
	q8aAEnd(a, l)
}

// q8aAStep is a pointer's advance per block pair.
type q8aAStep struct {
	reg string
	n   int
}

// q8aABlockLoop emits a kernel's walk over the blocks of a weight row,
// following a SHRQ $1, DX (DX = blocks/2): <l>pair runs two blocks (blk(0)
// into accumulator 0, blk(1) into accumulator 1, the one-row kernels
// prefetching 1 KiB ahead first) and advances the pointers by steps;
// <l>odd runs the last block of an odd count into accumulator 0 (odd sets
// the flags: ZF when the count is even); <l>sum follows.
func q8aABlockLoop(a *asm, l string, prefetch bool, blk func(j int), steps []q8aAStep, odd func()) {
	a.op("JZ %sodd", l)
	a.raw("")
	a.label(l + "pair")
	if prefetch {
		a.op("PREFETCHT0 1024(BX)")
	}
	blk(0)
	blk(1)
	for _, s := range steps {
		a.op("ADDQ $%d, %s", s.n, s.reg)
	}
	a.op("DECQ DX")
	a.op("JNZ %spair", l)
	a.raw("")
	a.label(l + "odd")
	odd()
	a.op("JZ %ssum", l)
	blk(0)
	a.raw("")
	a.label(l + "sum")
}

// q8aAEnd closes the row loop <l>row (CX rows) and the function.
func q8aAEnd(a *asm, l string) {
	a.op("DECQ CX")
	a.op("JNZ %srow", l)
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// q8aALoadMacro emits the four-row kernels' weight load: Q8_0_W4 (which
// also converts dw into X5) or Q4_0_W (constants from memory: the four-row
// kernels use Y8-Y15 as accumulators).
func q8aALoadMacro(a *asm, t q8aAType) {
	if t.q4 {
		a.raw(`// Q4_0_W loads the nibbles of the block at woff(BX) into Y2: bytes 0-15
// are the low nibbles (elements 0-15), bytes 16-31 the high ones.`)
		q8aADefine(a, "Q4_0_W(woff)", func(m *asm) {
			t.load(m, "woff", "q4shift<>(SB)", "mask0f<>(SB)")
		})
		return
	}
	a.raw(`// Q8_0_W4 loads the block at woff(BX): Y2 = w, Y3 = |w|, X5 = dw (low
// float).`)
	q8aADefine(a, "Q8_0_W4(woff)", func(m *asm) {
		t.load(m, "woff", "", "")
		m.op("VCVTPH2PS woff(BX), X5")
	})
}

// q8aARowMacro emits <T>_ROW, the block product for one activation row of
// a four-row kernel (the weights already loaded, dw in X5): the same
// operations as <T>_BLK, the scale product in X6 so that X5 survives.
func q8aARowMacro(a *asm, t q8aAType) {
	if t.q4 {
		a.raw(`// Q4_0_ROW is Q4_0_BLK for one activation row, with Y2 = q and X5 = dw.
// Clobbers Y4, Y6.`)
	} else {
		a.raw(`// Q8_0_ROW is Q8_0_BLK for one activation row. Clobbers Y4, Y6.`)
	}
	q8aADefine(a, t.mac+"_ROW("+t.params("xaddr", "caddr", "daddr", "acc")+")", func(m *asm) {
		t.product(m, "xaddr", "caddr")
		q8aAScale(m, "ones16<>(SB)", "", "daddr", 6, "acc")
	})
}

// q8aABlk4Macro emits <T>_BLK4(woff, xoff, doff, a0, ..., a3): one weight
// block against the four activation rows, row r accumulating into ar (its
// corrections, Q4_0, at xoff(R8) on the same row index).
func q8aABlk4Macro(a *asm, t q8aAType) {
	q8aADefine(a, t.mac+"_BLK4(woff, xoff, doff, a0, a1, a2, a3)", func(m *asm) {
		if t.q4 {
			m.op("Q4_0_W(woff)")
			m.op("VCVTPH2PS woff(BX), X5")
		} else {
			m.op("Q8_0_W4(woff)")
		}
		for r, idx := range q8aARows {
			args := []any{"xoff(R12)" + idx, "xoff(R8)" + idx, "doff(R13)" + idx, fmt.Sprintf("a%d", r)}
			if !t.q4 {
				args = append(args[:1], args[2:]...)
			}
			m.op("%s", q8aACall(t.mac+"_ROW", args...))
		}
	})
}

// q8aAVec4 emits the four-row kernel of type t:
//
//	func <t>Vec4AVX2(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)
//
// out[r*ostride+i] = weight row i . activation row r (r < 4, at x +
// r*xstride). Registers: DI out, CX rows left, SI the weight row, R11/R14
// the activation row stride (x1, x3); per weight row BX walks the
// weights, R12 the quants, R13 the d, R8 (Q4_0) the corrections, DX the
// block pairs; Y8-Y15 are the accumulators (q8aAAcc).
func q8aAVec4(a *asm, t q8aAType) {
	name, l := t.name+"Vec4AVX2", t.label+"r4"
	a.raw("// func %s(out []float32, ostride int, w []byte, stride, rows, blocks int, x []byte, xstride int)", name)
	a.raw("//")
	a.raw("// out[r*ostride+i] = (the weight row at w+i*stride) . (the activation")
	a.raw("// row at x+r*xstride), for r < 4, i < rows.")
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-112", name)
	a.op("MOVQ out_base+0(FP), DI")
	a.op("MOVQ w_base+32(FP), SI")
	a.op("MOVQ rows+64(FP), CX")
	a.op("MOVQ xstride+104(FP), R11")
	a.op("LEAQ (R11)(R11*2), R14")
	a.raw("")
	a.label(l + "row")
	a.op("MOVQ SI, BX")
	a.op("MOVQ x_base+80(FP), R12")
	a.op("MOVQ blocks+72(FP), DX")
	steps := []q8aAStep{{"BX", 2 * t.block}, {"R12", 64}}
	if t.q4 {
		q8aAScaled(a, "DX", 5, "R12", "R8", "corrections")
		steps = append(steps, q8aAStep{"R8", 64})
	}
	steps = append(steps, q8aAStep{"R13", 8})
	q8aAScaled(a, "DX", 6, "R12", "R13", "d")
	a.op("ZERO8")
	a.op("SHRQ $1, DX")
	blk := func(j int) {
		args := []any{t.block * j, 32 * j, 4 * j}
		for r := 0; r < 4; r++ {
			args = append(args, q8aAAcc(r, j))
		}
		a.op("%s", q8aACall(t.mac+"_BLK4", args...))
	}
	q8aABlockLoop(a, l, false, blk, steps, func() {
		a.op("MOVQ blocks+72(FP), DX")
		a.op("TESTQ $1, DX")
	})
	a.op("STORE4")
	a.op("ADDQ $4, DI")
	a.op("ADDQ stride+56(FP), SI")
	q8aAEnd(a, l)
}
