// Package device describes the machine siskin runs on and turns that into
// deployment settings.
//
// Probe reads the CPU's vector features (x86 AVX2 to AMX, arm64 NEON to
// SVE), core counts, caches and memory; MeasureBandwidth times how fast
// the cores can read main memory, the bound on decode speed for a model
// that does not fit in cache. Deploy profiles (YAML files and the
// built-ins such as "x86-avx2-laptop") hold serving settings, AutoProfile
// picks a built-in from a probe, Resolve merges flags, a profile file, the
// model's generation_config and the auto profile, reporting where every
// value came from, and ChooseWeightPath decides which weight layout the
// kernels should use on this CPU.
package device
