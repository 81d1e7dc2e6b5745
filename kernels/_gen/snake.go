package main

import "fmt"

// SnakeBeta x + inv*sin(a*x)^2 (kernels/sin.go): the same Cody-Waite
// reduction by pi (in FMA steps) and degree-9 odd polynomial as the Go
// kernel, rounding q to nearest even (the Go kernel rounds halves away
// from zero; either q gives the same square). A vector holding a lane
// with |a*x| > 2^15 or NaN stops the loop before anything of it is
// written; the Go wrapper finishes that vector with the scalar code.
//
//	func(dst, x, a, inv *float32, n int) int  (n a multiple of the width;
//	returns the elements done)
var snakeConsts = []struct {
	name string
	v    float32
}{
	{"invpi", 0.31830988618379067154}, {"pia", 3.140625}, {"pib", 0.0009670257568359375},
	{"pic", 6.2771141529083251953e-7}, {"pid", 1.2154201256553420762e-10},
	{"c4", 2.6083159809786593541503e-06}, {"c3", -0.0001981069071916863322258},
	{"c2", 0.00833307858556509017944336}, {"c1", -0.166666597127914428710938},
	{"max", 1 << 15},
}

func snakeData(a *asm) {
	for _, c := range snakeConsts {
		a.data("snk"+c.name, splatF(c.v))
	}
	a.data("snkabs", splatU(0x7fffffff))
}

// snake emits the kernel for vector width vw (8: AVX2, 16: AVX-512).
// AVX-512 keeps the constants in Z16-Z26; AVX2 reads them from memory.
func snake(a *asm, name string, vw int) {
	r := func(i int) string {
		if vw == 16 {
			return fmt.Sprintf("Z%d", i)
		}
		return fmt.Sprintf("Y%d", i)
	}
	c := func(n string) string {
		if vw == 16 {
			for i, k := range snakeConsts {
				if k.name == n {
					return r(16 + i)
				}
			}
			return r(26)
		}
		return "snk" + n + "<>(SB)"
	}
	a.raw("// func %s(dst, x, a, inv *float32, n int) int", name)
	a.raw("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	a.op("MOVQ dst+0(FP), DI")
	a.op("MOVQ x+8(FP), SI")
	a.op("MOVQ a+16(FP), R8")
	a.op("MOVQ inv+24(FP), R9")
	a.op("MOVQ n+32(FP), CX")
	a.op("XORQ AX, AX")
	if vw == 16 {
		for i, k := range snakeConsts {
			a.op("VBROADCASTSS snk%s<>(SB), %s", k.name, r(16+i))
		}
		a.op("VBROADCASTSS snkabs<>(SB), %s", r(26))
	}
	a.op("CMPQ AX, CX")
	a.op("JGE %sdone", name)
	a.label(name + "loop")
	a.op("VMOVUPS (SI)(AX*4), %s", r(0))
	a.op("VMULPS (R8)(AX*4), %s, %s", r(0), r(1)) // y = a*x
	a.op("%s %s, %s, %s", avx512F("VANDPS", vw), c("abs"), r(1), r(2))
	if vw == 16 {
		a.op("VCMPPS $6, %s, %s, K1", c("max"), r(2)) // !(|y| <= max)
		a.op("KORTESTW K1, K1")
	} else {
		a.op("VCMPPS $6, %s, %s, %s", c("max"), r(2), r(2))
		a.op("VMOVMSKPS %s, DX", r(2))
		a.op("TESTL DX, DX")
	}
	a.op("JNZ %sdone", name)
	a.op("VMULPS %s, %s, %s", c("invpi"), r(1), r(3))
	if vw == 16 {
		a.op("VRNDSCALEPS $8, %s, %s", r(3), r(3))
	} else {
		a.op("VROUNDPS $8, %s, %s", r(3), r(3))
	}
	for _, p := range []string{"pia", "pib", "pic", "pid"} {
		a.op("VFNMADD231PS %s, %s, %s", c(p), r(3), r(1)) // y -= q*pi part
	}
	a.op("VMULPS %s, %s, %s", r(1), r(1), r(4)) // s = d*d
	a.op("VMOVUPS %s, %s", c("c4"), r(5))
	for _, p := range []string{"c3", "c2", "c1"} {
		a.op("VFMADD213PS %s, %s, %s", c(p), r(4), r(5)) // u = u*s + c
	}
	a.op("VMULPS %s, %s, %s", r(5), r(4), r(5))        // s*u
	a.op("VFMADD213PS %s, %s, %s", r(1), r(1), r(5))   // (s*u)*d + d
	a.op("VMULPS %s, %s, %s", r(5), r(5), r(5))        // sin^2
	a.op("VFMADD231PS (R9)(AX*4), %s, %s", r(5), r(0)) // x + inv*sin^2
	a.op("VMOVUPS %s, (DI)(AX*4)", r(0))
	a.op("ADDQ $%d, AX", vw)
	a.op("CMPQ AX, CX")
	a.op("JLT %sloop", name)
	a.label(name + "done")
	a.op("MOVQ AX, ret+40(FP)")
	a.op("VZEROUPPER")
	a.op("RET")
	a.raw("")
}
