package main

// vecmulti_amd64.s and vecmulti16_amd64.s: the attention kernels for
// several query rows at once (the query heads that share a KV head), with
// the keys and values as float32 or as f16. Each query row's results are
// bit-identical to the one-row kernels of vec_amd64.s: only the loads of
// keys and values are shared between rows, never a sum.
//
// The f16 forms are the float32 ones with another load: keys and values
// are loaded as halves and widened with VCVTPH2PS (exact), then go
// through the same FMAs in the same order, so each result is
// bit-identical to the float32 kernel on the widened rows. A step reads
// 32 bytes of a row instead of 64: the point of an f16 cache is half the
// bytes streamed from memory per token. vecAElem is what differs.

func init() {
	files["vecmulti_amd64.s"] = vecAMultiFile
	files["vecmulti16_amd64.s"] = vecAMulti16File
}

// vecAElem is the element type of the key and value rows.
type vecAElem struct {
	f16 bool
}

// shift is log2 of the element size (for the strides).
func (e vecAElem) shift() int {
	if e.f16 {
		return 1
	}
	return 2
}

// step is the bytes of 8 elements (one YMM register of floats).
func (e vecAElem) step() int { return 8 << e.shift() }

// load widens 8 elements at addr into the floats of reg.
func (e vecAElem) load(a *asm, addr, reg string) {
	if e.f16 {
		a.op("VCVTPH2PS %s, %s", addr, reg)
		return
	}
	a.op("VMOVUPS %s, %s", addr, reg)
}

var (
	vecAF32 = vecAElem{}
	vecAF16 = vecAElem{f16: true}
)

// vecARows4 indexes four rows from a base register, the stride in s and
// three times it in s3.
func vecARows4(s, s3 string) [4]string {
	return [4]string{"", s + "*1", s + "*2", s3 + "*1"}
}

func vecAMultiFile() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`
// Attention kernels for several query rows at once (the query heads that
// share a KV head). Each query row's results are bit-identical to the
// one-row kernels in vec_amd64.s: only the loads of keys and values are
// shared between rows, never a sum.
`)
	vecADot4(a, vecAF32)
	vecAAxpy4(a, vecAF32)
	return a
}

func vecAMulti16File() *asm {
	a := &asm{}
	a.b.WriteString(header)
	a.raw(`
// The f16 forms of dot4Rows and axpy4Rows (vecmulti_amd64.s): keys and
// values are widened with VCVTPH2PS (exact) and go through the same FMAs
// in the same order, so each result is bit-identical to the float32
// kernel on the widened rows; a step streams half the bytes.
`)
	vecADot4(a, vecAF16)
	vecAAxpy4(a, vecAF16)
	vecAConvert(a, "f32ToF16AVX2", "dst []uint16, src []float32", "toh",
		"len(src) is a multiple of 8; immediate 0 rounds to nearest even.", true)
	vecAConvert(a, "f16ToF32SIMD", "dst []float32, src []uint16", "tof",
		"len(src) is a multiple of 8.", false)
	return a
}

// vecADot4 writes dot4Rows (e float32) or dot4RowsF16: for query rows j
// < 4 (q[j*qstride:], 16*steps floats) and key rows i < 2*pairs
// (k[i*kstride:]), out[j*ostride+i] = vecDotAVX2(q_j, k_i) * scale,
// bit-identical. vecDotAVX2 sums a row in one accumulator of 8 lanes;
// here the 8 (query, key) accumulators of a pair of keys (Y0-Y7, query j
// and key i in Y(2j+i): 4 query loads and 2 key loads per 8 FMAs) take
// each key row in one pass, 64 bytes of q (16 floats) per step, and are
// then reduced with the additions of vecDotAVX2, all eight pairs in one
// register (vecAReduce8). The lanes come out as (j, i) = (0,0) (0,1)
// (1,0) (1,1) | (2,0) (2,1) (3,0) (3,1), so each query row's two results
// are stored as one 64-bit pair. Each step prefetches the same line of
// both rows of next, the rows the caller reads after these (kstride
// elements apart too; R15 = next - k, so BX+R15 follows them): in decode
// the key cache streams from memory. pairs = 0 returns at once; steps
// must be at least 1 (the step loop counts down before its test: the
// callers pass width/dotLanes with width > 0).
//
// Registers: R8 out, R9 ostride (bytes), SI q, R12/R13 qstride (x1, x3
// bytes), DI the pair's first key row, R10 kstride (bytes), DX pairs
// left, Y15 scale; in the step loop AX q, BX and R11 the two key rows,
// R14 the steps left, Y8/Y9 the keys, Y10-Y13 the four query loads.
func vecADot4(a *asm, e vecAElem) {
	name, elem, l := "dot4Rows", "float32", "d4"
	if e.f16 {
		name, elem, l = "dot4RowsF16", "uint16", "h4"
	}
	a.raw("// func %s(out []float32, ostride int, q []float32, qstride int, k []%s, kstride, pairs, steps int, scale float32, next []%s)", name, elem, elem)
	a.raw("// out[j*ostride+i] = vecDotAVX2(q[j*qstride:], k[i*kstride:]) * scale for j < 4,")
	a.raw("// i < 2*pairs: a pair of keys at a time, eight accumulators Y(2j+i).")
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-144", name)
	a.op("MOVQ out_base+0(FP), R8")
	a.op("MOVQ ostride+24(FP), R9")
	a.op("SHLQ $2, R9")
	a.op("MOVQ q_base+32(FP), SI")
	a.op("MOVQ qstride+56(FP), R12")
	a.op("SHLQ $2, R12")
	a.op("LEAQ (R12)(R12*2), R13")
	a.op("MOVQ k_base+64(FP), DI")
	a.op("MOVQ kstride+88(FP), R10")
	a.op("SHLQ $%d, R10", e.shift())
	a.op("MOVQ pairs+96(FP), DX")
	a.op("VBROADCASTSS scale+112(FP), Y15")
	a.op("MOVQ next_base+120(FP), R15")
	a.op("SUBQ DI, R15")
	a.op("TESTQ DX, DX")
	a.op("JE %send", l)
	a.raw("")
	a.label(l + "pair")
	a.op("MOVQ SI, AX")
	a.op("MOVQ DI, BX")
	a.op("LEAQ (DI)(R10*1), R11")
	a.op("MOVQ steps+104(FP), R14")
	vecAZero(a, 8)
	a.raw("")
	a.label(l + "step")
	keys := []string{"BX", "R11"}
	for _, k := range keys {
		a.op("PREFETCHT0 %s", vecAMem(0, k, "R15*1"))
	}
	qrows := vecARows4("R12", "R13")
	for h := 0; h < 2; h++ {
		for i, k := range keys {
			e.load(a, vecAMem(h*e.step(), k, ""), y(8+i))
		}
		for j, ix := range qrows {
			qr := y(10 + j)
			a.op("VMOVUPS %s, %s", vecAMem(32*h, "AX", ix), qr)
			for i := range keys {
				a.op("VFMADD231PS %s, %s, %s", y(8+i), qr, y(2*j+i))
			}
		}
	}
	a.op("ADDQ $64, AX")
	for _, k := range keys {
		a.op("ADDQ $%d, %s", 2*e.step(), k)
	}
	a.op("DECQ R14")
	a.op("JNZ %sstep", l)
	a.raw("")
	if e.f16 {
		a.op("// The reduction of dot4Rows.")
	} else {
		a.op("// Reduce the eight pairs at once, each as vecDotAVX2 does (t = lo + hi,")
		a.op("// then (t0+t1)+(t2+t3)). The lanes come out as (j, i) = (0,0) (0,1)")
		a.op("// (1,0) (1,1) | (2,0) (2,1) (3,0) (3,1): each query row's two results")
		a.op("// are stored as one 64-bit pair.")
	}
	vecAReduce8(a)
	a.op("LEAQ (R9)(R9*2), AX")
	for j, ix := range vecARows4("R9", "AX") {
		if j == 2 {
			a.op("VEXTRACTF128 $1, Y0, X1")
		}
		mov := "VMOVLPS"
		if j%2 == 1 {
			mov = "VMOVHPS"
		}
		a.op("%s X%d, %s", mov, j/2, vecAMem(0, "R8", ix))
	}
	a.op("ADDQ $8, R8")
	a.op("LEAQ (DI)(R10*2), DI")
	a.op("DECQ DX")
	a.op("JNZ %spair", l)
	a.raw("")
	a.label(l + "end")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// vecAAxpy4 writes axpy4Rows (e float32) or axpy4RowsF16: for rows j < 4
// and i = 0, 1, ... n-1 in turn, y_j += p[j*pstride+i] * v[i*vstride:],
// over the first 16*chunks floats of y_j = y[j*ystride:], each element
// by the FMAs of axpyRowsAVX2 in the same order. 16 floats of each of
// the four rows stay in Y0-Y7 (row j in Y(2j), Y(2j+1)) while the value
// rows pass (2 loads and 4 broadcasts per 8 FMAs). Each row step
// prefetches the same 64 bytes of the same row of next (vstride elements
// apart too; R11 = next - v): the values (or keys) the caller reads next
// are on their way while these are summed.
//
// Registers: DI y at the chunk, R9/R13 ystride (x1, x3 bytes), R8 p,
// R12/R14 pstride (x1, x3 bytes), SI v at the chunk, R10 vstride
// (bytes), CX chunks left; in the row loop AX p, BX the value row, DX
// the rows left, Y8/Y9 the values, Y10-Y13 the four broadcasts of p.
func vecAAxpy4(a *asm, e vecAElem) {
	name, elem, l := "axpy4Rows", "float32", "a4"
	if e.f16 {
		name, elem, l = "axpy4RowsF16", "uint16", "ha4"
	}
	a.raw("// func %s(y []float32, ystride int, p []float32, pstride, n int, v []%s, vstride, chunks int, next []%s)", name, elem, elem)
	a.raw("// y[j*ystride:] += p[j*pstride+i] * v[i*vstride:] for j < 4 and i < n in turn,")
	a.raw("// 16 floats of each y row held in Y0-Y7 while the value rows pass.")
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-136", name)
	a.op("MOVQ y_base+0(FP), DI")
	a.op("MOVQ ystride+24(FP), R9")
	a.op("SHLQ $2, R9")
	a.op("LEAQ (R9)(R9*2), R13")
	a.op("MOVQ p_base+32(FP), R8")
	a.op("MOVQ pstride+56(FP), R12")
	a.op("SHLQ $2, R12")
	a.op("LEAQ (R12)(R12*2), R14")
	a.op("MOVQ v_base+72(FP), SI")
	a.op("MOVQ vstride+96(FP), R10")
	a.op("SHLQ $%d, R10", e.shift())
	a.op("MOVQ next_base+112(FP), R11")
	a.op("SUBQ SI, R11")
	a.op("MOVQ chunks+104(FP), CX")
	a.op("TESTQ CX, CX")
	a.op("JE %send", l)
	a.op("CMPQ n+64(FP), $0")
	a.op("JE %send", l)
	a.raw("")
	yrows := vecARows4("R9", "R13")
	// move copies the 16 floats of each row between memory and Y0-Y7.
	move := func(load bool) {
		for j, ix := range yrows {
			for c := 0; c < 2; c++ {
				m, r := vecAMem(32*c, "DI", ix), y(2*j+c)
				if load {
					a.op("VMOVUPS %s, %s", m, r)
				} else {
					a.op("VMOVUPS %s, %s", r, m)
				}
			}
		}
	}
	a.label(l + "chunk")
	move(true)
	a.op("MOVQ R8, AX")
	a.op("MOVQ SI, BX")
	a.op("MOVQ n+64(FP), DX")
	a.raw("")
	a.label(l + "row")
	a.op("PREFETCHT0 (BX)(R11*1)")
	for c := 0; c < 2; c++ {
		e.load(a, vecAMem(c*e.step(), "BX", ""), y(8+c))
	}
	for j, ix := range vecARows4("R12", "R14") {
		pr := y(10 + j)
		a.op("VBROADCASTSS %s, %s", vecAMem(0, "AX", ix), pr)
		for c := 0; c < 2; c++ {
			a.op("VFMADD231PS %s, %s, %s", y(8+c), pr, y(2*j+c))
		}
	}
	a.op("ADDQ $4, AX")
	a.op("ADDQ R10, BX")
	a.op("DECQ DX")
	a.op("JNZ %srow", l)
	move(false)
	a.op("ADDQ $64, DI")
	a.op("ADDQ $%d, SI", 2*e.step())
	a.op("DECQ CX")
	a.op("JNZ %schunk", l)
	a.raw("")
	a.label(l + "end")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// vecAConvert writes a conversion between float32 and f16, 8 elements
// (one YMM of floats, one XMM of halves) per step: toF16 converts src
// floats to halves with VCVTPS2PH (immediate 0: round to nearest even),
// otherwise src halves are widened with VCVTPH2PS (exact). len(src) must
// be a multiple of 8 (the Go wrappers convert the rest); l is the label
// prefix and doc the line under the signature.
func vecAConvert(a *asm, name, args, l, doc string, toF16 bool) {
	a.raw("// func %s(%s)", name, args)
	a.raw("// %s", doc)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	a.op("MOVQ dst_base+0(FP), DI")
	a.op("MOVQ src_base+24(FP), SI")
	a.op("MOVQ src_len+32(FP), CX")
	a.op("SHRQ $3, CX")
	a.op("JE %sdone", l)
	a.raw("")
	a.label(l + "loop")
	src, dst := vecAF32, vecAF16
	if toF16 {
		a.op("VMOVUPS (SI), Y0")
		a.op("VCVTPS2PH $0, Y0, (DI)")
	} else {
		src, dst = vecAF16, vecAF32
		src.load(a, "(SI)", "Y0")
		a.op("VMOVUPS Y0, (DI)")
	}
	a.op("ADDQ $%d, SI", src.step())
	a.op("ADDQ $%d, DI", dst.step())
	a.op("DECQ CX")
	a.op("JNZ %sloop", l)
	a.raw("")
	a.label(l + "done")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}
