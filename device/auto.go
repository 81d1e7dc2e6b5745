package device

import "fmt"

// isARM64 reports an arm64 CPU; a synthetic Info without Arch counts as
// arm64 when it has arm64 features.
func isARM64(info *Info) bool {
	return info.CPU.Arch == "arm64" || (info.CPU.Arch == "" && info.Features.ASIMD)
}

// isX86 reports an x86 CPU (or a synthetic Info with x86 features only).
func isX86(info *Info) bool {
	switch info.CPU.Arch {
	case "amd64", "386":
		return true
	case "":
		return !info.Features.ASIMD
	}
	return false
}

// autoBase picks the built-in profile that matches the CPU.
func autoBase(info *Info) (name, why string) {
	f := info.Features
	switch {
	case isARM64(info) && f.DotProd:
		return ProfileARM64DotProd, "arm64 with dotprod (SDOT/UDOT)"
	case isARM64(info):
		return ProfileARM64NEONBoard, "arm64 without dotprod"
	case !isX86(info):
		return ProfileARM64NEONBoard, fmt.Sprintf("no built-in for %s; the most conservative one", info.CPU.Arch)
	case f.AMXTile && f.AMXInt8:
		return ProfileX86AMXServer, "AMX int8 tiles usable"
	case f.AVX512F && f.AVX512BW:
		if f.AVX512VNNI {
			return ProfileX86AVX512Server, "AVX-512 with VNNI"
		}
		return ProfileX86AVX512Server, "AVX-512 without VNNI"
	case f.AVX2:
		return ProfileX86AVX2Laptop, "AVX2 without AVX-512"
	}
	return ProfileX86AVX2Laptop, "x86 without AVX2 (generic kernels); the smallest x86 built-in"
}

// AutoProfile builds the "auto" profile from a probe (nil: Probe()): the
// built-in that matches the CPU's features, with threads set to
// info.DefaultThreads() (one per physical core) and kv_cache_bytes to a
// quarter of the available memory, leaving room for the weights (mapped
// from the file, so also drawing on available memory), the activations
// and the rest of the system.
func AutoProfile(info *Info) *Profile {
	if info == nil {
		info = Probe()
	}
	base, why := autoBase(info)
	p, err := BuiltinProfile(base)
	if err != nil {
		panic(err) // the built-ins are embedded and tested
	}
	p.Name, p.Base, p.Why, p.Source = "auto", base, why, "auto profile "+base
	threads := info.DefaultThreads()
	p.Threads = &threads
	if avail := info.Memory.AvailableBytes; avail > 0 {
		kv := max(avail/4, 1)
		p.KVCacheBytes = &kv
	}
	return p
}

// ChooseWeightPath decides how the kernels should hold the weights on
// this CPU, and says why. The rule:
//
//   - priority "fidelity": w4a16, on every CPU, because its 4-bit
//     layers keep the activations in floats rather than quantizing them
//     to int8 (the layers it keeps at 8 bits, as every 4-bit path does,
//     are W8A8: see weightpath.Target).
//     Its float kernels cost speed: on Zen 5 (AVX-512 kernels, Qwen3-1.7B
//     shape from F16, two rounds in turn; README) it decoded at 0.67-0.68x
//     and prefilled at 0.35-0.37x of q4_k_m's speed.
//   - arm64: w4a16 until a dotprod w4a8 kernel has been measured to win.
//     (w4a8 and w8a8 run the Q4_0/Q8_0 NEON and dotprod kernels on rows
//     repacked at load, when asked for; no arm64 hardware has timed them.)
//   - AMX: as AVX-512 VNNI below. Measured on an AMX Xeon (Sapphire
//     Rapids class, 2 threads, Qwen3-1.7B shape from F16, siskin bench
//     -p 512 -n 128 -r 3, two alternated pairs) before the AMX Q4_K
//     kernel, when the AVX-512 tier ran every path: w4a8 prefilled
//     1.07-1.08x as fast as q4_k_m, q4_k_m decoded 1.05-1.10x as fast as
//     w4a8; both decode within 10% of the faster, so the more faithful
//     q4_k_m wins. With the AMX kernels since (Q4_K and Q4_0 prefill,
//     the latter w4a8's; same measurement, two alternated pairs) q4_k_m
//     leads both: pp512 240.1 / 241.9 against 216.0 / 214.7, tg128
//     16.89 / 17.32 against 16.48 / 16.36. The Q6_K AMX kernel added
//     after that speeds up only q4_k_m (its attn_v and ffn_down); the
//     Q8_0 one, w8a8's prefill (pp512 181 -> 224-233, still below
//     q4_k_m's 280-290).
//   - AVX-512 VNNI: q4_k_m, as on AVX2. The avx512 kernel tier has
//     VPDPBUSD kernels for Q4_K/Q6_K (q4_k_m) and for Q4_0/Q8_0 (w4a8,
//     w8a8) alike and gives the AVX2 tier's bits, so the fidelity figures
//     below hold unchanged (siskin eval on tiny Spark gave KL 0.4945 for
//     q4_k_m and 0.6216 for w4a8 in both tiers); on Zen 5 the packed Q4_K
//     kernel ran 1.3x (one activation row) and 1.4x (16 rows) the W4A8
//     one per weight byte (kernels' BenchmarkPackedCompute, best of 6 in
//     one run), and q4_k_m reads fewer bytes per token (6-bit layers
//     where w4a8 keeps 8-bit ones). Whole model (Qwen3-0.6B shape from
//     F16, siskin bench, 2 threads, two alternated pairs on a loaded Zen
//     5; docs/speed-history.md): q4_k_m decoded 1.4x and 2.6x as fast as
//     w4a8, which prefilled at 1.0x and 1.18x of q4_k_m's speed.
//   - AVX2 without AVX-512 VNNI: q4_k_m, llama.cpp's Q4_K_M mix made at
//     load. Without VNNI an int8 dot product costs VPMADDUBSW plus an
//     add, so w4a8 has no arithmetic edge over the Q4_K kernels: on the
//     Spark-1.7B shape (siskin bench, 2 threads, 4 alternated rounds)
//     q4_k_m decoded 1.15-1.28x faster (fewer bytes per token) and
//     prefilled at 0.83-1.30x (median 0.89x) of w4a8's speed, and it
//     agrees with the reference better (siskin eval: tiny Spark mean KL
//     0.51 against w4a8's 0.67, tiny Qwen3 0.18 against 0.26). w4a8 in
//     turn beats w4a16's float kernels at the same fidelity. With
//     AVX-VNNI (the avxvnni kernel tier), measured on an Intel Xeon
//     pinned to that tier (SISKIN_KERNELS=avxvnni, Qwen3-1.7B shape
//     from F16, -p 512 -n 128 -r 3, two alternated pairs): w4a8 tg128
//     12.71 / 13.56, q4_k_m 11.51 / 13.00 (0.91x and 0.96x, within 10%),
//     pp512 119.8 / 116.5 against 110.3 / 106.3; q4_k_m stays, barely.
//
// The weight paths themselves are built elsewhere (package weightpath,
// which also keeps files already quantized to 6 bits or fewer on gguf
// when the choice is automatic); this only decides.
func ChooseWeightPath(info *Info, priority string) (path WeightPath, why string) {
	f := info.Features
	switch {
	case priority == PriorityFidelity:
		return WeightPathW4A16, "priority fidelity: its 4-bit layers take float activations, not int8 (its 8-bit layers are W8A8, as on every 4-bit path)"
	case isARM64(info):
		dp := "no dotprod"
		if f.DotProd {
			dp = "has dotprod"
		}
		return WeightPathW4A16, "arm64 (" + dp + "): w4a16 until a dotprod w4a8 kernel is measured"
	case f.AVX512VNNI:
		why := "AVX-512 VNNI: q4_k_m (llama.cpp's Q4_K_M mix made at load), whose VNNI kernels measured faster per byte than w4a8's and which is more faithful to the reference"
		if f.AMXTile && f.AMXInt8 {
			why += "; AMX tiles are usable: the AVX-512 tier runs Q4_K, Q6_K, Q4_0 and Q8_0 prefill on them (decode is unchanged)"
		} else if info.AMX.CPUHas {
			why += "; the CPU has AMX but it is not usable here"
			if info.AMX.Detail != "" {
				why += " (" + info.AMX.Detail + ")"
			}
		}
		return WeightPathQ4KM, why
	case f.AVX2:
		why := "AVX2 without AVX-512 VNNI: q4_k_m (llama.cpp's Q4_K_M mix made at load), measured faster than w4a8 at decode and more faithful to the reference"
		if f.AVXVNNI {
			why += "; the avxvnni kernel tier runs it with AVX-VNNI, where q4_k_m decoded within 10% of w4a8"
		}
		return WeightPathQ4KM, why
	}
	return WeightPathGGUF, "no AVX2: the generic GGUF kernels"
}
