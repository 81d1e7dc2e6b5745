// Encoded arm64 instructions the Go assembler has no mnemonic for (see
// shared/docs/kernels.md). Each macro takes vector register numbers
// (0-31) and emits one instruction word; the comment gives the
// disassembly of the form. encsamples_arm64.s instantiates every macro and
// encoding_arm64_test.go checks the words against the encodings printed
// by aarch64-linux-gnu-objdump (GNU binutils 2.40).

// movi vd.2d, #0
#define MOVI0(d) WORD $(0x6f00e400 | (d))

// sdot vd.4s, vn.16b, vm.16b (FEAT_DotProd)
#define SDOT_4S(d, n, m) WORD $(0x4e809400 | ((m)<<16) | ((n)<<5) | (d))

// smull vd.8h, vn.8b, vm.8b
#define SMULL_8H(d, n, m) WORD $(0x0e20c000 | ((m)<<16) | ((n)<<5) | (d))

// smull2 vd.8h, vn.16b, vm.16b
#define SMULL2_8H(d, n, m) WORD $(0x4e20c000 | ((m)<<16) | ((n)<<5) | (d))

// smlal vd.8h, vn.8b, vm.8b
#define SMLAL_8H(d, n, m) WORD $(0x0e208000 | ((m)<<16) | ((n)<<5) | (d))

// smlal2 vd.8h, vn.16b, vm.16b
#define SMLAL2_8H(d, n, m) WORD $(0x4e208000 | ((m)<<16) | ((n)<<5) | (d))

// smull vd.4s, vn.4h, vm.4h
#define SMULL_4S(d, n, m) WORD $(0x0e60c000 | ((m)<<16) | ((n)<<5) | (d))

// smlal2 vd.4s, vn.8h, vm.8h
#define SMLAL2_4S(d, n, m) WORD $(0x4e608000 | ((m)<<16) | ((n)<<5) | (d))

// saddlp vd.4s, vn.8h
#define SADDLP_4S(d, n) WORD $(0x4e602800 | ((n)<<5) | (d))

// sadalp vd.4s, vn.8h
#define SADALP_4S(d, n) WORD $(0x4e606800 | ((n)<<5) | (d))

// mul vd.4s, vn.4s, vm.4s
#define MUL_4S(d, n, m) WORD $(0x4ea09c00 | ((m)<<16) | ((n)<<5) | (d))

// mla vd.4s, vn.4s, vm.4s
#define MLA_4S(d, n, m) WORD $(0x4ea09400 | ((m)<<16) | ((n)<<5) | (d))

// sxtl vd.8h, vn.8b (sshll #0)
#define SXTL_8H(d, n) WORD $(0x0f08a400 | ((n)<<5) | (d))

// sxtl2 vd.8h, vn.16b
#define SXTL2_8H(d, n) WORD $(0x4f08a400 | ((n)<<5) | (d))

// sxtl vd.4s, vn.4h
#define SXTL_4S(d, n) WORD $(0x0f10a400 | ((n)<<5) | (d))

// sxtl2 vd.4s, vn.8h
#define SXTL2_4S(d, n) WORD $(0x4f10a400 | ((n)<<5) | (d))

// scvtf vd.4s, vn.4s
#define SCVTF_4S(d, n) WORD $(0x4e21d800 | ((n)<<5) | (d))

// scvtf sd, sn (the int32 in the low lane of vn)
#define SCVTF_S(d, n) WORD $(0x5e21d800 | ((n)<<5) | (d))

// fadd vd.4s, vn.4s, vm.4s
#define FADD_4S(d, n, m) WORD $(0x4e20d400 | ((m)<<16) | ((n)<<5) | (d))

// fmul vd.4s, vn.4s, vm.4s
#define FMUL_4S(d, n, m) WORD $(0x6e20dc00 | ((m)<<16) | ((n)<<5) | (d))

// faddp vd.4s, vn.4s, vm.4s
#define FADDP_4S(d, n, m) WORD $(0x6e20d400 | ((m)<<16) | ((n)<<5) | (d))

// faddp sd, vn.2s
#define FADDP_S(d, n) WORD $(0x7e30d800 | ((n)<<5) | (d))

// fmla vd.4s, vn.4s, vm.s[0]
#define FMLA_S0(d, n, m) WORD $(0x4f801000 | ((m)<<16) | ((n)<<5) | (d))

// fmla vd.4s, vn.4s, vm.s[i] (i in 0-3: its bits are H (11) and L (21))
#define FMLA_SI(d, n, m, i) WORD $(0x4f801000 | (((i)&1)<<21) | (((i)>>1)<<11) | ((m)<<16) | ((n)<<5) | (d))

// fcvtl vd.4s, vn.4h
#define FCVTL_4S(d, n) WORD $(0x0e217800 | ((n)<<5) | (d))

// fcvtl2 vd.4s, vn.8h
#define FCVTL2_4S(d, n) WORD $(0x4e217800 | ((n)<<5) | (d))

// HSUM4 leaves in the low lane of v (Fv) the sum of its 4 floats, added as
// (a0+a1)+(a2+a3).
#define HSUM4(v) FADDP_4S(v, v, v); FADDP_S(v, v)

// smmla vd.4s, vn.16b, vm.16b (FEAT_I8MM): vd's 2x2 int32 tile +=
// (2x8 int8 rows of vn) times (2x8 int8 rows of vm) transposed.
#define SMMLA_4S(d, n, m) WORD $(0x4e80a400 | ((m)<<16) | ((n)<<5) | (d))

// frinta vd.4s, vn.4s (round to nearest, ties away from zero: Go's
// math.Round)
#define FRINTA_4S(d, n) WORD $(0x6e218800 | ((n)<<5) | (d))
