package device

import (
	"math"
	"runtime"
	"strings"

	"github.com/klauspost/cpuid/v2"
	"github.com/klauspost/cpuid/v2/topology"
	"golang.org/x/sys/cpu"
)

// Info is what Probe found out about this machine. Tests build synthetic
// values to exercise AutoProfile and ChooseWeightPath for CPUs they do not
// run on; every field has a meaningful zero.
type Info struct {
	CPU      CPU      `json:"cpu"`
	Features Features `json:"features"`
	AMX      AMX      `json:"amx"`
	Cores    Cores    `json:"cores"`
	Caches   Caches   `json:"caches"`
	Memory   Memory   `json:"memory"`
	// BandwidthGBs is the measured main-memory read bandwidth in GB/s
	// (10^9 bytes per second); nil when it was not measured.
	BandwidthGBs *float64 `json:"bandwidth_gbs"`
	// Bandwidth holds the details of that measurement, nil when none.
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
}

// CPU names the processor.
type CPU struct {
	Brand  string `json:"brand"`  // e.g. "AMD EPYC 7R13 Processor"
	Vendor string `json:"vendor"` // e.g. "AuthenticAMD", "GenuineIntel", "ARM"
	Arch   string `json:"arch"`   // runtime.GOARCH
	OS     string `json:"os"`     // runtime.GOOS
}

// Features are the instruction-set extensions the kernels can use. Each
// is true only if the CPU has it and the OS saves the registers it needs
// (golang.org/x/sys/cpu checks XCR0 for the AVX and AVX-512 state), so a
// kernel may use it without further checks. The AMX fields are true only
// when the tile state is usable (see AMX).
type Features struct {
	AVX2       bool `json:"avx2"`
	FMA        bool `json:"fma"`
	F16C       bool `json:"f16c"`
	AVX512F    bool `json:"avx512f"`
	AVX512BW   bool `json:"avx512bw"`
	AVX512VNNI bool `json:"avx512vnni"`
	AVX512BF16 bool `json:"avx512bf16"`
	AVXVNNI    bool `json:"avxvnni"` // the VEX-encoded VNNI of client CPUs (Alder Lake on)
	AMXTile    bool `json:"amx_tile"`
	AMXInt8    bool `json:"amx_int8"`
	AMXBF16    bool `json:"amx_bf16"`
	ASIMD      bool `json:"asimd"`   // arm64 NEON (always present on arm64)
	DotProd    bool `json:"dotprod"` // arm64 SDOT/UDOT (ASIMDDP)
	I8MM       bool `json:"i8mm"`    // arm64 SMMLA/USMMLA
	SVE        bool `json:"sve"`
}

// FeatureNames lists the feature names of Features.Map (and of the JSON
// object) in a fixed order: x86 first, then arm64.
var FeatureNames = []string{
	"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vnni", "avx512bf16", "avxvnni",
	"amx_tile", "amx_int8", "amx_bf16",
	"asimd", "dotprod", "i8mm", "sve",
}

// FeatureNamesFor returns the feature names an architecture can have:
// the x86 ones on amd64 and 386, the arm64 ones on arm64, else all.
func FeatureNamesFor(arch string) []string {
	switch arch {
	case "amd64", "386":
		return FeatureNames[:11]
	case "arm64":
		return FeatureNames[11:]
	}
	return FeatureNames
}

// Map returns the features by their lower-case names (FeatureNames).
func (f Features) Map() map[string]bool {
	return map[string]bool{
		"avx2": f.AVX2, "fma": f.FMA, "f16c": f.F16C,
		"avx512f": f.AVX512F, "avx512bw": f.AVX512BW, "avx512vnni": f.AVX512VNNI, "avx512bf16": f.AVX512BF16,
		"avxvnni":  f.AVXVNNI,
		"amx_tile": f.AMXTile, "amx_int8": f.AMXInt8, "amx_bf16": f.AMXBF16,
		"asimd": f.ASIMD, "dotprod": f.DotProd, "i8mm": f.I8MM, "sve": f.SVE,
	}
}

// AMX tells the three conditions for using Intel AMX tiles apart, because
// a CPU that has them can still be unable to use them: a kernel before
// 5.16, a hypervisor that hides the state, or a seccomp filter.
type AMX struct {
	CPUHas      bool   `json:"cpu_has"`      // CPUID reports AMX-TILE
	XCR0Enabled bool   `json:"xcr0_enabled"` // the OS enabled the tile state (XCR0 bits 17 and 18)
	OSGrants    bool   `json:"os_grants"`    // Linux granted this process the tile data (arch_prctl)
	Detail      string `json:"detail,omitempty"`
}

// Usable reports whether AMX tile instructions may run in this process.
func (a AMX) Usable() bool { return a.CPUHas && a.XCR0Enabled && a.OSGrants }

// Cores counts the processor's cores.
type Cores struct {
	Physical       int `json:"physical"`
	Logical        int `json:"logical"`
	ThreadsPerCore int `json:"threads_per_core"`
	// Usable is the number of logical CPUs this process may run on
	// (runtime.NumCPU, which honours the affinity mask and cpusets).
	Usable int `json:"usable"`
	// Hybrid is set on CPUs with cores of different speeds (Intel P and
	// E cores, Arm big.LITTLE); then Performance and Efficiency count
	// the physical cores of each kind.
	Hybrid      bool `json:"hybrid"`
	Performance int  `json:"performance,omitempty"`
	Efficiency  int  `json:"efficiency,omitempty"`
	// CgroupCPUs is the container's CPU quota in CPUs (cgroup v2 cpu.max,
	// v1 cpu.cfs_quota_us / cpu.cfs_period_us, the tightest over the
	// process's cgroup and its ancestors); 0 without a quota.
	CgroupCPUs float64 `json:"cgroup_cpus,omitempty"`
}

// Caches holds cache sizes in bytes as the CPU reports them (per core
// for L1 and usually L2, per core complex or socket for L3); 0 when
// unknown.
type Caches struct {
	L1D int64 `json:"l1d_bytes"`
	L2  int64 `json:"l2_bytes"`
	L3  int64 `json:"l3_bytes"`
}

// Memory holds the memory sizes in bytes; 0 when unknown.
type Memory struct {
	TotalBytes     int64 `json:"total_bytes"`
	AvailableBytes int64 `json:"available_bytes"`
	// CgroupLimitBytes is the container's memory limit when it is below
	// the machine's (already applied to the two fields above), else 0.
	CgroupLimitBytes int64 `json:"cgroup_limit_bytes,omitempty"`
}

// Probe inspects the CPU and memory. It does not measure bandwidth
// (that takes about a second; see MeasureBandwidth). On Linux with an
// AMX CPU it asks the kernel for the tile state, a per-process grant
// that the AMX kernels need anyway.
func Probe() *Info {
	c := &cpuid.CPU
	info := &Info{
		CPU: CPU{
			Brand:  strings.TrimSpace(c.BrandName),
			Vendor: c.VendorString,
			Arch:   runtime.GOARCH,
			OS:     runtime.GOOS,
		},
	}
	if info.CPU.Vendor == "" && c.VendorID != cpuid.VendorUnknown {
		info.CPU.Vendor = c.VendorID.String()
	}
	x, a := &cpu.X86, &cpu.ARM64
	info.Features = Features{
		AVX2: x.HasAVX2, FMA: x.HasFMA, F16C: x.HasF16C,
		AVX512F: x.HasAVX512F, AVX512BW: x.HasAVX512BW,
		AVX512VNNI: x.HasAVX512VNNI, AVX512BF16: x.HasAVX512BF16,
		AVXVNNI: x.HasAVXVNNI,
		ASIMD:   a.HasASIMD, DotProd: a.HasASIMDDP, I8MM: a.HasI8MM, SVE: a.HasSVE,
	}
	info.AMX = probeAMX(x.HasAMXTile)
	if info.AMX.Usable() {
		info.Features.AMXTile = true
		info.Features.AMXInt8 = x.HasAMXInt8
		info.Features.AMXBF16 = x.HasAMXBF16
	}

	info.Cores = Cores{
		Physical:       c.PhysicalCores,
		Logical:        c.LogicalCores,
		ThreadsPerCore: c.ThreadsPerCore,
		Usable:         runtime.NumCPU(),
	}
	// Only a hybrid CPU needs the per-core scan, which briefly pins this
	// thread to every CPU in turn; elsewhere all cores are alike.
	if c.Supports(cpuid.HYBRID_CPU) {
		info.Cores.Hybrid = true
		if sys, err := cpuid.ScanTopology(); err == nil {
			for _, p := range sys.Packages {
				for t, n := range p.CoresByType() {
					switch t {
					case topology.Performance:
						info.Cores.Performance += n
					case topology.Efficiency, topology.LPEfficiency, topology.Dense:
						info.Cores.Efficiency += n
					}
				}
			}
		}
	}
	info.Caches = Caches{L1D: cacheSize(c.Cache.L1D), L2: cacheSize(c.Cache.L2), L3: cacheSize(c.Cache.L3)}

	// OS sources fill what CPUID cannot tell (arm64 has no brand string
	// or cache leaves readable from user space) or tells wrongly (a
	// container's memory limit).
	probeOS(info)

	if info.Cores.Logical <= 0 {
		info.Cores.Logical = info.Cores.Usable
	}
	if info.Cores.Physical <= 0 {
		info.Cores.Physical = info.Cores.Logical
	}
	if info.Cores.ThreadsPerCore <= 0 {
		info.Cores.ThreadsPerCore = max(1, info.Cores.Logical/info.Cores.Physical)
	}
	return info
}

// cacheSize maps cpuid's -1 (unknown) to 0.
func cacheSize(n int) int64 { return int64(max(n, 0)) }

// DefaultThreads is the thread count the kernels should use: one per
// physical core, because the matrix kernels saturate a core's vector
// units and a second hyperthread only adds contention; on a hybrid CPU
// only the performance cores, because the threads wait for each other at
// every layer and so run at the pace of the slowest core. It never
// exceeds the CPUs this process may run on, nor the container's CPU
// quota rounded up: a Kubernetes pod limited to 2 CPUs on a 64-core host
// that ran 64 threads would spend its quota in a few milliseconds and be
// throttled for the rest of each period, at every layer's barrier.
func (i *Info) DefaultThreads() int {
	n := i.Cores.Physical
	if i.Cores.Hybrid && i.Cores.Performance > 0 {
		n = i.Cores.Performance
	}
	if i.Cores.Usable > 0 && (n <= 0 || n > i.Cores.Usable) {
		n = i.Cores.Usable
	}
	if q := i.Cores.CgroupCPUs; q > 0 && float64(n) > q {
		n = int(math.Ceil(q - 1e-9))
	}
	return max(n, 1)
}
