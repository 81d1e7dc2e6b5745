//go:build arm64 && gc && !purego

package kernels

import "testing"

// encWant lists, in the order of encsamples_arm64.s, the instruction words
// and disassembly that aarch64-linux-gnu-objdump (GNU binutils 2.40,
// Debian bookworm) printed for the encSamples function; the macros of
// neon_arm64.h must produce exactly these words.
var encWant = []struct {
	word uint32
	asm  string
}{
	{0x6f00e41f, "movi v31.2d, #0x0"},
	{0x6f00e400, "movi v0.2d, #0x0"},
	{0x4e90941f, "sdot v31.4s, v0.16b, v16.16b"},
	{0x4e8197e0, "sdot v0.4s, v31.16b, v1.16b"},
	{0x4e9f9545, "sdot v5.4s, v10.16b, v31.16b"},
	{0x0e30c01f, "smull v31.8h, v0.8b, v16.8b"},
	{0x0e21c3e0, "smull v0.8h, v31.8b, v1.8b"},
	{0x0e3fc145, "smull v5.8h, v10.8b, v31.8b"},
	{0x4e30c01f, "smull2 v31.8h, v0.16b, v16.16b"},
	{0x4e21c3e0, "smull2 v0.8h, v31.16b, v1.16b"},
	{0x4e3fc145, "smull2 v5.8h, v10.16b, v31.16b"},
	{0x0e30801f, "smlal v31.8h, v0.8b, v16.8b"},
	{0x0e2183e0, "smlal v0.8h, v31.8b, v1.8b"},
	{0x0e3f8145, "smlal v5.8h, v10.8b, v31.8b"},
	{0x4e30801f, "smlal2 v31.8h, v0.16b, v16.16b"},
	{0x4e2183e0, "smlal2 v0.8h, v31.16b, v1.16b"},
	{0x4e3f8145, "smlal2 v5.8h, v10.16b, v31.16b"},
	{0x0e70c01f, "smull v31.4s, v0.4h, v16.4h"},
	{0x0e61c3e0, "smull v0.4s, v31.4h, v1.4h"},
	{0x0e7fc145, "smull v5.4s, v10.4h, v31.4h"},
	{0x4e70801f, "smlal2 v31.4s, v0.8h, v16.8h"},
	{0x4e6183e0, "smlal2 v0.4s, v31.8h, v1.8h"},
	{0x4e7f8145, "smlal2 v5.4s, v10.8h, v31.8h"},
	{0x4eb09c1f, "mul v31.4s, v0.4s, v16.4s"},
	{0x4ea19fe0, "mul v0.4s, v31.4s, v1.4s"},
	{0x4ebf9d45, "mul v5.4s, v10.4s, v31.4s"},
	{0x4eb0941f, "mla v31.4s, v0.4s, v16.4s"},
	{0x4ea197e0, "mla v0.4s, v31.4s, v1.4s"},
	{0x4ebf9545, "mla v5.4s, v10.4s, v31.4s"},
	{0x4e30d41f, "fadd v31.4s, v0.4s, v16.4s"},
	{0x4e21d7e0, "fadd v0.4s, v31.4s, v1.4s"},
	{0x4e3fd545, "fadd v5.4s, v10.4s, v31.4s"},
	{0x6e30dc1f, "fmul v31.4s, v0.4s, v16.4s"},
	{0x6e21dfe0, "fmul v0.4s, v31.4s, v1.4s"},
	{0x6e3fdd45, "fmul v5.4s, v10.4s, v31.4s"},
	{0x6e30d41f, "faddp v31.4s, v0.4s, v16.4s"},
	{0x6e21d7e0, "faddp v0.4s, v31.4s, v1.4s"},
	{0x6e3fd545, "faddp v5.4s, v10.4s, v31.4s"},
	{0x4f90101f, "fmla v31.4s, v0.4s, v16.s[0]"},
	{0x4f8113e0, "fmla v0.4s, v31.4s, v1.s[0]"},
	{0x4f9f1145, "fmla v5.4s, v10.4s, v31.s[0]"},
	{0x4fb0101f, "fmla v31.4s, v0.4s, v16.s[1]"},
	{0x4f811be0, "fmla v0.4s, v31.4s, v1.s[2]"},
	{0x4fbf1945, "fmla v5.4s, v10.4s, v31.s[3]"},
	{0x4f8f12c9, "fmla v9.4s, v22.4s, v15.s[0]"},
	{0x4e60281f, "saddlp v31.4s, v0.8h"},
	{0x4e602be0, "saddlp v0.4s, v31.8h"},
	{0x4e602ac9, "saddlp v9.4s, v22.8h"},
	{0x4e60681f, "sadalp v31.4s, v0.8h"},
	{0x4e606be0, "sadalp v0.4s, v31.8h"},
	{0x4e606ac9, "sadalp v9.4s, v22.8h"},
	{0x0f08a41f, "sxtl v31.8h, v0.8b"},
	{0x0f08a7e0, "sxtl v0.8h, v31.8b"},
	{0x0f08a6c9, "sxtl v9.8h, v22.8b"},
	{0x4f08a41f, "sxtl2 v31.8h, v0.16b"},
	{0x4f08a7e0, "sxtl2 v0.8h, v31.16b"},
	{0x4f08a6c9, "sxtl2 v9.8h, v22.16b"},
	{0x0f10a41f, "sxtl v31.4s, v0.4h"},
	{0x0f10a7e0, "sxtl v0.4s, v31.4h"},
	{0x0f10a6c9, "sxtl v9.4s, v22.4h"},
	{0x4f10a41f, "sxtl2 v31.4s, v0.8h"},
	{0x4f10a7e0, "sxtl2 v0.4s, v31.8h"},
	{0x4f10a6c9, "sxtl2 v9.4s, v22.8h"},
	{0x4e21d81f, "scvtf v31.4s, v0.4s"},
	{0x4e21dbe0, "scvtf v0.4s, v31.4s"},
	{0x4e21dac9, "scvtf v9.4s, v22.4s"},
	{0x5e21d81f, "scvtf s31, s0"},
	{0x5e21dbe0, "scvtf s0, s31"},
	{0x5e21dac9, "scvtf s9, s22"},
	{0x7e30d81f, "faddp s31, v0.2s"},
	{0x7e30dbe0, "faddp s0, v31.2s"},
	{0x7e30dac9, "faddp s9, v22.2s"},
	{0x0e21781f, "fcvtl v31.4s, v0.4h"},
	{0x0e217be0, "fcvtl v0.4s, v31.4h"},
	{0x0e217ac9, "fcvtl v9.4s, v22.4h"},
	{0x4e21781f, "fcvtl2 v31.4s, v0.8h"},
	{0x4e217be0, "fcvtl2 v0.4s, v31.8h"},
	{0x4e217ac9, "fcvtl2 v9.4s, v22.8h"},
	{0x4e90a41f, "smmla v31.4s, v0.16b, v16.16b"},
	{0x4e81a7e0, "smmla v0.4s, v31.16b, v1.16b"},
	{0x4e9fa545, "smmla v5.4s, v10.16b, v31.16b"},
	{0x6e21881f, "frinta v31.4s, v0.4s"},
	{0x6e218be0, "frinta v0.4s, v31.4s"},
	{0x6e218ac9, "frinta v9.4s, v22.4s"},
}

func TestEncodings(t *testing.T) {
	for i, e := range encWant {
		if w := encSampleWord(i); w != e.word {
			t.Errorf("sample %d (%s): assembled %#08x, objdump's encoding %#08x", i, e.asm, w, e.word)
		}
	}
	if w, ret := encSampleWord(len(encWant)), uint32(0xd65f03c0); w != ret {
		t.Errorf("encSamples has %#08x after the samples, want ret (%#08x): the table and the samples differ in length", w, ret)
	}
}
