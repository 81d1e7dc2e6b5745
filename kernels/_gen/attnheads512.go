package main

import "fmt"

// The AVX-512 f16 and q8_0 attention kernels over every KV head of a row
// at once (decode): a position's keys (or values) of all heads
// are one row of the cache, and reading row after row streams the cache
// in order of address, where the one-head kernels read a column of 136
// bytes a row, 1088 bytes apart (Qwen3-1.7B's eight heads of 128), which
// measured about 1.3x slower from memory at equal calls. Each head's
// sums are the one-head kernel's (the same groups and FMA chains for a
// key's score; a value column's multiply-adds in order of position), so
// the bits are those of a call per head.

// The kernels prefetch the bytes they will read some way ahead in the
// order they read them (a group of rows' heads one after another, then
// the next group's): a head's rows at pnear bytes from those being read,
// or, for the last pr heads of a group, at pfar (their successors are in
// the next group of rows). kernels.headsPrefetch sets the three; the
// distance is a variable there, tuned by measurement. Prefetching never
// faults past the cache's end.

// valueRows is the value rows the axpy kernel takes for every head before
// it moves on (each head's output rows are loaded and stored once per
// group).
const valueRows = 16

// attnDotHeads512 emits dot<T>Heads<m>AVX512(out []float32, ostride int,
// q, qstride int, k []byte, kstride, n, steps int, scale float32, heads,
// hout, hq, hk int): dot<T>x<m>AVX512 for each head h < heads, its
// scores hout bytes on in out, its query rows hq bytes on in q and its
// keys hk bytes on in each row, a group of keys for every head before the
// next group, prefetching as the file's comment says. Stack: the group's
// DI, SI and R8, heads left.
func attnDotHeads512(a *asm, t attnType, m int) {
	name := fmt.Sprintf("dot%sHeads%dAVX512%s", t.name, m, t.tag)
	l := func(s string) string { return fmt.Sprintf("adh%s%d%s%s", t.name, m, t.tag, s) }
	tmp, big, qt := attnDotShape(t, m)
	a.raw("// func %s(out []float32, ostride int, q %s, qstride int, k []byte, kstride, n, steps int, scale float32, heads, hout, hq, hk, pnear, pfar, pr int)", name, qt)
	a.raw("TEXT ·%s(SB), NOSPLIT, $32-176", name)
	attnDotArgs(a, t, m)
	attnKeyGroups(a, l, big, func(g int) {
		a.op("MOVQ DI, 0(SP)")
		a.op("MOVQ SI, 8(SP)")
		a.op("MOVQ R8, 16(SP)")
		a.op("MOVQ heads+120(FP), AX")
		a.op("MOVQ AX, 24(SP)")
		a.label(l(fmt.Sprint("h", g)))
		headsAheadOffset(a, "R15", "24(SP)", 152)
		attnDotGroup(a, t, m, g, tmp, l(fmt.Sprint("s", g)))
		a.op("ADDQ hk+144(FP), DI")
		a.op("ADDQ hq+136(FP), SI")
		a.op("ADDQ hout+128(FP), R8")
		a.op("DECQ 24(SP)")
		a.op("JNZ %s", l(fmt.Sprint("h", g)))
		a.op("MOVQ 0(SP), DI")
		a.op("MOVQ 8(SP), SI")
		a.op("MOVQ 16(SP), R8")
	})
}

// attnAxpyHeads512 emits axpy<T>Heads<m>AVX512(y []float32, ystride int,
// p []float32, pstride, n int, v []byte, vstride, chunks int, heads, hy,
// hp, hv, pnear, pfar, pr int): axpy<T>x<m>AVX512 for each head h <
// heads, its output rows hy bytes on in y, its weights hp bytes on in p
// and its values hv bytes on in each row, valueRows rows for every head
// before the next rows, prefetching as the file's comment says. Stack:
// rows left, the group's DI, R8 and SI, heads left, the group's rows, a
// head's DI and SI.
func attnAxpyHeads512(a *asm, t attnType, m int) {
	name := fmt.Sprintf("axpy%sHeads%dAVX512%s", t.name, m, t.tag)
	l := func(s string) string { return fmt.Sprintf("axh%s%d%s%s", t.name, m, t.tag, s) }
	a.raw("// func %s(y []float32, ystride int, p []float32, pstride, n int, v []byte, vstride, chunks int, heads, hy, hp, hv, pnear, pfar, pr int)", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $64-168", name)
	attnAxpyArgs(a)
	a.op("MOVQ n+64(FP), AX")
	a.op("MOVQ AX, 0(SP)")
	a.label(l("rows"))
	a.op("MOVQ 0(SP), AX")
	a.op("CMPQ AX, $0")
	a.op("JLE %s", l("end"))
	a.op("MOVQ $%d, BX", valueRows)
	a.op("CMPQ AX, BX")
	a.op("CMOVQLT AX, BX")
	a.op("MOVQ BX, 40(SP)")
	a.op("MOVQ DI, 8(SP)")
	a.op("MOVQ R8, 16(SP)")
	a.op("MOVQ SI, 24(SP)")
	a.op("MOVQ heads+112(FP), AX")
	a.op("MOVQ AX, 32(SP)")
	a.label(l("head"))
	headsAheadOffset(a, "R11", "32(SP)", 144)
	a.op("MOVQ DI, 48(SP)")
	a.op("MOVQ SI, 56(SP)")
	a.op("MOVQ chunks+104(FP), CX")
	attnAxpyColumns(a, t, m, l, "40(SP)", l("cend"))
	a.label(l("cend"))
	a.op("MOVQ 48(SP), DI")
	a.op("MOVQ 56(SP), SI")
	a.op("ADDQ hy+120(FP), DI")
	a.op("ADDQ hp+128(FP), R8")
	a.op("ADDQ hv+136(FP), SI")
	a.op("DECQ 32(SP)")
	a.op("JNZ %s", l("head"))
	// The next rows: y as it was, p and v the group's rows on.
	a.op("MOVQ 8(SP), DI")
	a.op("MOVQ 40(SP), AX")
	a.op("MOVQ 16(SP), R8")
	a.op("LEAQ (R8)(AX*4), R8")
	a.op("MOVQ 24(SP), SI")
	a.op("IMULQ R10, AX")
	a.op("ADDQ AX, SI")
	a.op("MOVQ 40(SP), AX")
	a.op("SUBQ AX, 0(SP)")
	a.op("JMP %s", l("rows"))
	a.label(l("end"))
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}

// headsAheadOffset sets reg, the prefetch offset of the head whose
// count of heads left (with itself) is at left: pnear, or pfar where
// that count is pr or less (pnear, pfar and pr at off(FP) on; AX
// scratch).
func headsAheadOffset(a *asm, reg, left string, off int) {
	a.op("MOVQ pnear+%d(FP), %s", off, reg)
	a.op("MOVQ pr+%d(FP), AX", off+16)
	a.op("CMPQ %s, AX", left)
	a.op("CMOVQLE pfar+%d(FP), %s", off+8, reg)
}
