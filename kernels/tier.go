package kernels

// The amd64 assembly of the packed kernels and the row operations is
// written by kernels/_gen (TestGeneratedAssembly checks it is current).
//
//go:generate go run ./_gen -out .

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/siskin-ml/siskin/tensor"
)

// A tier is one implementation of the matrix kernels and the vector
// operations: the pure-Go reference (generic) or a SIMD one. Results differ between tiers only by
// float rounding (the order in which per-block terms are added); within a
// tier they are deterministic and independent of the thread count, and a
// batched MatMul row equals MatVec on that row bit for bit.
type tier uint8

const (
	tierGeneric tier = iota
	tierAVX2
	tierNEON    // arm64 Advanced SIMD
	tierDotprod // arm64 NEON with SDOT (FEAT_DotProd)
	tierI8MM    // dotprod plus SMMLA 4-row kernels (FEAT_I8MM)
	tierAVX512  // AVX2 plus AVX-512F/BW/VL and AVX-512 VNNI kernels
	tierAVXVNNI // AVX2 plus AVX-VNNI (VEX VPDPBUSD on 256 bits) kernels
	numTiers
)

var tierNames = [numTiers]string{"generic", "avx2", "neon", "dotprod", "i8mm", "avx512", "avxvnni"}

// preference lists the SIMD tiers from the one picked first at start-up
// (when supported and not opt-in) to the last; generic comes after all.
var preference = []tier{tierAVX512, tierAVXVNNI, tierAVX2, tierI8MM, tierDotprod, tierNEON}

func (t tier) String() string {
	if t < numTiers {
		return tierNames[t]
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// supported[t] reports whether this CPU and build can run tier t; the
// dispatch file of the architecture fills it in at init.
var supported [numTiers]bool

// kernelSets[t] holds tier t's kernels, indexed by weight type; a nil
// entry falls back to the generic kernel for that type.
var kernelSets [numTiers]map[tensor.Type]*matKernel

// optIn[t]: tier t runs only when EnvKernels names it (supported but not
// picked at start-up): i8mm until its kernels are timed on a CPU that has
// them (they give the same bits as dotprod's).
var optIn = [numTiers]bool{tierI8MM: true}

var current atomic.Uint32 // the tier in use

// EnvKernels is the environment variable that pins the kernel tier
// ("generic", "avx2", "avxvnni", "avx512", "neon", "dotprod", "i8mm"); it is read once, at start-up. Naming a tier the
// CPU cannot run panics, so a bisection never silently tests another.
const EnvKernels = "SISKIN_KERNELS"

func init() {
	supported[tierGeneric] = true
	kernelSets[tierGeneric] = genericKernels()
	vecSets[tierGeneric] = genericVecKernels()
	archInit()
	for t := range vecSets {
		if vecSets[t] == nil {
			vecSets[t] = vecSets[tierGeneric]
		}
	}
	best := tierGeneric
	for _, t := range preference {
		if supported[t] && !optIn[t] {
			best = t
			break
		}
	}
	if s := os.Getenv(EnvKernels); s != "" {
		t, ok := parseTier(s)
		if !ok {
			panic(fmt.Sprintf("kernels: %s=%q: unknown tier (want one of %v)", EnvKernels, s, tierNames))
		}
		if !supported[t] {
			panic(fmt.Sprintf("kernels: %s=%q: this CPU or build cannot run it", EnvKernels, s))
		}
		best = t
	}
	current.Store(uint32(best))
}

func parseTier(s string) (tier, bool) {
	for i, n := range tierNames {
		if n == s {
			return tier(i), true
		}
	}
	return 0, false
}

// Tier returns the name of the kernel tier in use ("generic", "avx2",
// "avxvnni", "avx512", "neon", ...).
func Tier() string { return tier(current.Load()).String() }

// OneRowTier is the tier whose kernels run the one-activation-row
// products (decode's): the current tier, but for the AVX-512 tier on CPUs
// where its one-row kernels lose to AVX2's (avx512_amd64.go).
func OneRowTier() string {
	t := Tier()
	if t == tierAVX512.String() && avx2OneRow {
		return tierAVX2.String()
	}
	return t
}

// TiersAvailable returns the tiers this CPU and build can run, in the
// order start-up prefers them (the last is "generic"); an opt-in tier
// (i8mm) is listed where it can run, although it is used only when pinned.
func TiersAvailable() []string {
	var s []string
	for _, t := range preference {
		if supported[t] {
			s = append(s, t.String())
		}
	}
	return append(s, tierGeneric.String())
}

// setTier switches the tier (tests); it returns the previous one.
func setTier(t tier) tier {
	if !supported[t] {
		panic("kernels: tier " + t.String() + " is not supported here")
	}
	return tier(current.Swap(uint32(t)))
}

// kernelFor returns the kernel for weights of type typ in the current
// tier.
func kernelFor(typ tensor.Type) *matKernel {
	t := tier(current.Load())
	if k := kernelSets[t][typ]; k != nil {
		return k
	}
	return kernelSets[tierGeneric][typ]
}
