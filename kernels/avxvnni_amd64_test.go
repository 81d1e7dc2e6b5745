//go:build amd64 && gc && !purego

package kernels

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestVNNIEncoding runs the VEX-encoded VPDPBUSD that kernels/_gen emits
// as bytes (Go's assembler has only the EVEX form) with each of Y0-Y15
// as destination, unsigned and signed operand, and compares it with the
// instruction's definition: each dword adds the four products of
// unsigned bytes of the second operand with signed bytes of the third,
// without saturation. A wrong register field gives another register's
// value, a wrong opcode or prefix another result or SIGILL.
func TestVNNIEncoding(t *testing.T) {
	if !supported[tierAVXVNNI] {
		t.Skipf("this CPU has no AVX-VNNI (avxvnni %v, avx2 %v): the VEX VPDPBUSD is not run here", cpu.X86.HasAVXVNNI, cpu.X86.HasAVX2)
	}
	var u, s, c [8]int32
	for i := range 8 {
		// Bytes covering 0 and 255 unsigned, -128 and 127 signed.
		u[i] = int32(uint32(0xff80_7f01) ^ uint32(i)*0x0101_0101)
		s[i] = int32(uint32(0x80ff_7f02) + uint32(i)*0x1103_0507)
		c[i] = int32(-1_000_000 + 333_333*i)
	}
	var out [16][8]int32
	vnniProbe(&out, &u, &s, &c)
	for r := range 16 {
		for i := range 8 {
			want := c[i]
			for b := range 4 {
				want += int32(uint8(u[i]>>(8*b))) * int32(int8(s[i]>>(8*b)))
			}
			if out[r][i] != want {
				t.Fatalf("Y%d dword %d: %d, want %d", r, i, out[r][i], want)
			}
		}
	}
}

// TestVNNIAssemblyIsVEX: the avxvnni kernels must run on CPUs without
// AVX-512 (Intel client cores), so their generated assembly names no ZMM
// register, no Y16-Y31, no mask register, no embedded broadcast and no
// instruction Go would encode with EVEX (VPDPBUSD only as VEX bytes).
func TestVNNIAssemblyIsVEX(t *testing.T) {
	src, err := os.ReadFile("packk_avxvnni_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	evex := regexp.MustCompile(`\bZ[0-9]+\b|\bY(1[6-9]|2[0-9]|3[01])\b|\bK[0-7]\b|\.BCST|\bVPDPBUSD\b|\bVP(AND|OR|XOR|TERNLOG)[DQ]\b|\bVMOVDQ(U|A)(8|16|32|64)\b|\bVINSERTI(32|64)X`)
	for i, line := range strings.Split(string(src), "\n") {
		code, _, _ := strings.Cut(line, "//")
		if m := evex.FindString(code); m != "" {
			t.Errorf("packk_avxvnni_amd64.s:%d: %q needs EVEX: %s", i+1, m, line)
		}
	}
}
