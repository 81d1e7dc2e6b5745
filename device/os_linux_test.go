package device

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// fakeRoot writes files under a temporary root and points the /proc and
// /sys readers at it for the test.
func fakeRoot(t *testing.T, files map[string]string) {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := sysRoot
	sysRoot = root
	t.Cleanup(func() { sysRoot = old })
}

const meminfo = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:    8000000 kB\nCached:          2000000 kB\n"

func TestLinuxMemory(t *testing.T) {
	fakeRoot(t, map[string]string{"/proc/meminfo": meminfo})
	if m := linuxMemory(); m.TotalBytes != 16000000<<10 || m.AvailableBytes != 8000000<<10 || m.CgroupLimitBytes != 0 {
		t.Errorf("plain: %+v", m)
	}

	// A container limited to 4 GiB (set on the parent cgroup), 1 GiB in
	// use of which 256 MiB is inactive page cache.
	fakeRoot(t, map[string]string{
		"/proc/meminfo":                         meminfo,
		"/proc/self/cgroup":                     "0::/pod/app\n",
		"/sys/fs/cgroup/pod/memory.max":         "4294967296\n",
		"/sys/fs/cgroup/pod/memory.current":     "1073741824\n",
		"/sys/fs/cgroup/pod/memory.stat":        "anon 1\ninactive_file 268435456\n",
		"/sys/fs/cgroup/pod/app/memory.max":     "max\n",
		"/sys/fs/cgroup/pod/app/memory.current": "1073741824\n",
		"/sys/fs/cgroup/pod/app/memory.stat":    "inactive_file 268435456\n",
		"/sys/fs/cgroup/memory.stat":            "inactive_file 0\n",
	})
	m := linuxMemory()
	want := Memory{TotalBytes: 4 << 30, AvailableBytes: 4<<30 - (1<<30 - 256<<20), CgroupLimitBytes: 4 << 30}
	if m != want {
		t.Errorf("cgroup v2: %+v, want %+v", m, want)
	}

	// cgroup v1 with "no limit" (a huge number) changes nothing.
	fakeRoot(t, map[string]string{
		"/proc/meminfo": meminfo,
		"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
	})
	if m := linuxMemory(); m.CgroupLimitBytes != 0 || m.TotalBytes != 16000000<<10 {
		t.Errorf("cgroup v1 unlimited: %+v", m)
	}
	// Old kernels without MemAvailable.
	fakeRoot(t, map[string]string{"/proc/meminfo": "MemTotal: 1000 kB\nMemFree: 100 kB\nCached: 200 kB\n"})
	if m := linuxMemory(); m.AvailableBytes != 300<<10 {
		t.Errorf("no MemAvailable: %+v", m)
	}
}

func TestSysfsTopology(t *testing.T) {
	// A Raspberry Pi 5-like board, and a big.LITTLE part for capacities.
	files := map[string]string{
		"/sys/firmware/devicetree/base/model": "Raspberry Pi 5 Model B Rev 1.0\x00",
		"/proc/cpuinfo":                       "processor\t: 0\nBogoMIPS\t: 108.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0b\n\nModel\t: Raspberry Pi 5 Model B Rev 1.0\n",
	}
	for i, c := range []string{"0", "1", "2", "3"} {
		d := "/sys/devices/system/cpu/cpu" + c
		files[d+"/topology/core_cpus_list"] = c + "\n"
		files[d+"/cpu_capacity"] = map[bool]string{true: "1024\n", false: "446\n"}[i < 2]
	}
	for _, idx := range []struct{ dir, level, typ, size string }{
		{"index0", "1", "Data", "64K"}, {"index1", "1", "Instruction", "64K"},
		{"index2", "2", "Unified", "512K"}, {"index3", "3", "Unified", "2048K"},
	} {
		d := "/sys/devices/system/cpu/cpu0/cache/" + idx.dir
		files[d+"/level"], files[d+"/type"], files[d+"/size"] = idx.level, idx.typ, idx.size
	}
	fakeRoot(t, files)
	if c := sysfsCaches(); c != (Caches{L1D: 64 << 10, L2: 512 << 10, L3: 2 << 20}) {
		t.Errorf("caches %+v", c)
	}
	if p, l := sysfsCores(); p != 4 || l != 4 {
		t.Errorf("cores %d physical %d logical", p, l)
	}
	if big, little := sysfsCapacities(); big != 2 || little != 2 {
		t.Errorf("capacities: %d big, %d little", big, little)
	}
	if b := linuxBrand(); b != "Raspberry Pi 5 Model B Rev 1.0 (Cortex-A76)" {
		t.Errorf("brand %q", b)
	}

	// Two hyperthreads per core: siblings lists collapse them.
	files = map[string]string{}
	for _, c := range []struct{ cpu, sib string }{{"0", "0,2"}, {"1", "1,3"}, {"2", "0,2"}, {"3", "1,3"}} {
		files["/sys/devices/system/cpu/cpu"+c.cpu+"/topology/thread_siblings_list"] = c.sib + "\n"
	}
	fakeRoot(t, files)
	if p, l := sysfsCores(); p != 2 || l != 4 {
		t.Errorf("SMT: %d physical %d logical", p, l)
	}
	if big, little := sysfsCapacities(); big != 0 || little != 0 {
		t.Errorf("no capacities: %d, %d", big, little)
	}
}

func TestParseCacheSize(t *testing.T) {
	for s, want := range map[string]int64{"32K": 32 << 10, "1024K": 1 << 20, "4M": 4 << 20, "1G": 1 << 30, "512": 512, "": 0, "xK": 0} {
		if got := parseCacheSize(s); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
	}
}

func TestCgroupCPUs(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  float64
	}{
		{"none", map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "max 100000\n"}, 0},
		// Kubernetes limits.cpu: 1500m on the pod, none on the container.
		{"v2 parent", map[string]string{
			"/proc/self/cgroup":                        "0::/kubepods/pod1/ctr\n",
			"/sys/fs/cgroup/kubepods/pod1/cpu.max":     "150000 100000\n",
			"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "max 100000\n",
		}, 1.5},
		{"v2 tightest wins", map[string]string{
			"/proc/self/cgroup":          "0::/a/b\n",
			"/sys/fs/cgroup/a/cpu.max":   "400000 100000\n",
			"/sys/fs/cgroup/a/b/cpu.max": "50000 50000\n",
		}, 1},
		// A container's v2 namespace: /proc/self/cgroup says "/", the
		// quota is at the mount's root.
		{"v2 namespaced", map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "200000 100000\n"}, 2},
		// v1 without a cgroup namespace: the host path does not exist in
		// the container's mount, whose root holds the container's quota.
		{"v1 container", map[string]string{
			"/proc/self/cgroup":                            "4:cpu,cpuacct:/docker/abc\n0::/\n",
			"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "300000\n",
			"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
		}, 3},
		{"v1 nested, unlimited", map[string]string{
			"/proc/self/cgroup":                      "1:cpu:/x\n",
			"/sys/fs/cgroup/cpu/x/cpu.cfs_quota_us":  "-1\n",
			"/sys/fs/cgroup/cpu/x/cpu.cfs_period_us": "100000\n",
			"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":    "-1\n",
			"/sys/fs/cgroup/cpu/cpu.cfs_period_us":   "100000\n",
		}, 0},
		{"v1 nested", map[string]string{
			"/proc/self/cgroup":                      "1:cpu:/x\n",
			"/sys/fs/cgroup/cpu/x/cpu.cfs_quota_us":  "100000\n",
			"/sys/fs/cgroup/cpu/x/cpu.cfs_period_us": "100000\n",
		}, 1},
		{"escaping path", map[string]string{"/proc/self/cgroup": "0::/../../..\n", "/sys/fs/cgroup/cpu.max": "100000\n"}, 1},
	}
	for _, c := range cases {
		fakeRoot(t, c.files)
		if got := cgroupCPUs(); got != c.want {
			t.Errorf("%s: %v CPUs, want %v", c.name, got, c.want)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	for in, want := range map[string]float64{
		"max 100000": 0, "100000 100000\n": 1, "250000 100000": 2.5, "50000": 0.5,
		"": 0, "x 100": 0, "100 0": 0, "-5 100": 0, "1 2 3": 0, "100 y": 0,
	} {
		if got := parseCPUMax(in); got != want {
			t.Errorf("parseCPUMax(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzParseCPUMax: any cpu.max content parses to a finite, non-negative
// quota without panicking.
func FuzzParseCPUMax(f *testing.F) {
	for _, s := range []string{"max 100000", "150000 100000\n", "50000", "", "1 2 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if q := parseCPUMax(s); q < 0 || math.IsNaN(q) || math.IsInf(q, 0) {
			t.Fatalf("parseCPUMax(%q) = %v", s, q)
		}
	})
}

func TestDefaultThreadsQuota(t *testing.T) {
	for _, c := range []struct {
		phys  int
		quota float64
		want  int
	}{{8, 0, 8}, {8, 1, 1}, {8, 1.5, 2}, {8, 0.5, 1}, {2, 4, 2}, {8, 3.0000000001, 3}} {
		i := &Info{Cores: Cores{Physical: c.phys, Usable: c.phys * 2, CgroupCPUs: c.quota}}
		if got := i.DefaultThreads(); got != c.want {
			t.Errorf("%d cores, quota %v: %d threads, want %d", c.phys, c.quota, got, c.want)
		}
	}
}
