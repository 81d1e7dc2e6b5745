package device

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// sysRoot prefixes the /proc and /sys paths so tests can point the
// readers at a fake tree.
var sysRoot = ""

func readFile(path string) ([]byte, error) { return os.ReadFile(sysRoot + path) }

// probeOS fills from /proc and /sys what CPUID left out.
func probeOS(info *Info) {
	info.Memory = linuxMemory()
	info.Cores.CgroupCPUs = cgroupCPUs()
	if info.CPU.Brand == "" {
		info.CPU.Brand = linuxBrand()
	}
	if info.Caches.L1D == 0 || info.Caches.L2 == 0 || info.Caches.L3 == 0 {
		c := sysfsCaches()
		info.Caches.L1D = cmpOr(info.Caches.L1D, c.L1D)
		info.Caches.L2 = cmpOr(info.Caches.L2, c.L2)
		info.Caches.L3 = cmpOr(info.Caches.L3, c.L3)
	}
	if info.Cores.Physical <= 0 || info.Cores.Logical <= 0 {
		if phys, logical := sysfsCores(); logical > 0 {
			info.Cores.Physical, info.Cores.Logical = phys, logical
		}
	}
	if !info.Cores.Hybrid {
		// Arm big.LITTLE: the scheduler's per-CPU capacity differs between
		// the big and the little cores. CPUID has no such leaf on arm64.
		if big, little := sysfsCapacities(); big > 0 && little > 0 {
			info.Cores.Hybrid, info.Cores.Performance, info.Cores.Efficiency = true, big, little
		}
	}
}

func cmpOr(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// linuxMemory reads /proc/meminfo and lowers the figures to the memory
// cgroup's limit, because in a container MemTotal is the host's and a KV
// cache sized from it would get the process killed.
func linuxMemory() Memory {
	var m Memory
	raw, err := readFile("/proc/meminfo")
	if err != nil {
		return m
	}
	kv := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		kv[k] = n
	}
	m.TotalBytes = kv["MemTotal"]
	if a, ok := kv["MemAvailable"]; ok {
		m.AvailableBytes = a
	} else {
		// Kernels before 3.14 have no MemAvailable; free plus page cache
		// is the usual approximation.
		m.AvailableBytes = kv["MemFree"] + kv["Cached"]
	}
	if limit, used := cgroupMemory(); limit > 0 && (m.TotalBytes == 0 || limit < m.TotalBytes) {
		m.CgroupLimitBytes = limit
		m.TotalBytes = limit
		m.AvailableBytes = min(m.AvailableBytes, max(limit-used, 0))
	}
	return m
}

// cgroupMemory returns the tightest memory limit over this process's
// cgroup and its ancestors, and the memory in use there that cannot be
// reclaimed (usage less inactive page cache); 0, 0 without a limit.
func cgroupMemory() (limit, used int64) {
	rel := "/"
	if raw, err := readFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				rel = p
			}
		}
	}
	// cgroup v2: walk up from our cgroup; a limit set on an ancestor
	// binds too.
	for dir := filepath.Join("/sys/fs/cgroup", rel); ; dir = filepath.Dir(dir) {
		if l, ok := readInt(dir + "/memory.max"); ok && (limit == 0 || l < limit) {
			limit = l
			cur, _ := readInt(dir + "/memory.current")
			used = cur - statField(dir+"/memory.stat", "inactive_file")
		}
		if dir == "/sys/fs/cgroup" || dir == "/" || dir == "." {
			break
		}
	}
	if limit > 0 {
		return limit, max(used, 0)
	}
	// cgroup v1, as seen from inside a container.
	const v1 = "/sys/fs/cgroup/memory"
	if l, ok := readInt(v1 + "/memory.limit_in_bytes"); ok && l < 1<<60 {
		cur, _ := readInt(v1 + "/memory.usage_in_bytes")
		return l, max(cur-statField(v1+"/memory.stat", "total_inactive_file"), 0)
	}
	return 0, 0
}

// cgroupCPUs returns the tightest CPU quota, in CPUs, over this process's
// cgroup and its ancestors; 0 without one. cgroup v2 keeps it in cpu.max
// ("QUOTA PERIOD" or "max PERIOD"), v1 in cpu.cfs_quota_us (-1: none)
// and cpu.cfs_period_us of the cpu controller's hierarchy. A container
// sees its own cgroup at the mount's root while /proc/self/cgroup names
// the host's path, so the walk starts at that path if it exists and
// always ends at the root.
func cgroupCPUs() float64 {
	v2, v1 := "/", "/"
	if raw, err := readFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 {
				continue
			}
			if f[0] == "0" && f[1] == "" {
				v2 = f[2]
			}
			for _, c := range strings.Split(f[1], ",") {
				if c == "cpu" {
					v1 = f[2]
				}
			}
		}
	}
	best := 0.0
	take := func(q float64) {
		if q > 0 && (best == 0 || q < best) {
			best = q
		}
	}
	walkCgroup("/sys/fs/cgroup", v2, func(dir string) { take(cpuMaxV2(dir + "/cpu.max")) })
	for _, mount := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
		walkCgroup(mount, v1, func(dir string) {
			quota, ok1 := readInt(dir + "/cpu.cfs_quota_us")
			period, ok2 := readInt(dir + "/cpu.cfs_period_us")
			if ok1 && ok2 && quota > 0 && period > 0 {
				take(float64(quota) / float64(period))
			}
		})
	}
	return best
}

// walkCgroup calls f on root/rel and each ancestor up to root.
func walkCgroup(root, rel string, f func(dir string)) {
	dir := filepath.Join(root, rel)
	if !strings.HasPrefix(dir, root+"/") {
		dir = root
	}
	for ; ; dir = filepath.Dir(dir) {
		f(dir)
		if dir == root {
			return
		}
	}
}

// cpuMaxV2 parses a cgroup v2 cpu.max file: "QUOTA PERIOD" in
// microseconds, or "max PERIOD" without a quota (0).
func cpuMaxV2(path string) float64 {
	raw, err := readFile(path)
	if err != nil {
		return 0
	}
	return parseCPUMax(string(raw))
}

// parseCPUMax is cpuMaxV2's parser: the quota in CPUs, 0 for "max" and
// anything malformed.
func parseCPUMax(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 || f[0] == "max" {
		return 0
	}
	quota, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || quota <= 0 {
		return 0
	}
	period := int64(100000) // the kernel's default when only the quota is written
	if len(f) == 2 {
		if period, err = strconv.ParseInt(f[1], 10, 64); err != nil || period <= 0 {
			return 0
		}
	}
	return float64(quota) / float64(period)
}

// readInt reads a file holding one integer ("max" and errors give false).
func readInt(path string) (int64, bool) {
	raw, err := readFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return n, err == nil
}

// statField reads "name value" from a cgroup stat file; 0 if absent.
func statField(path, name string) int64 {
	raw, err := readFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// linuxBrand names the CPU where CPUID has no brand string (arm64): the
// board's model from the device tree, then /proc/cpuinfo's model name,
// and the Arm core type from its part number.
func linuxBrand() string {
	var board, model, core string
	if raw, err := readFile("/sys/firmware/devicetree/base/model"); err == nil {
		board = strings.TrimSpace(string(bytes.TrimRight(raw, "\x00")))
	}
	if raw, err := readFile("/proc/cpuinfo"); err == nil {
		var implementer, part string
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch k {
			case "model name", "Model":
				if model == "" {
					model = v
				}
			case "CPU implementer":
				if implementer == "" {
					implementer = v
				}
			case "CPU part":
				if part == "" {
					part = v
				}
			}
		}
		if implementer == "0x41" {
			core = armCores[strings.ToLower(part)]
		}
	}
	if board == "" {
		board = model
	}
	switch {
	case board != "" && core != "":
		return fmt.Sprintf("%s (%s)", board, core)
	case board != "":
		return board
	}
	return core
}

// armCores maps the MIDR part numbers of Arm Ltd cores common on boards
// and servers to their names.
var armCores = map[string]string{
	"0xd03": "Cortex-A53", "0xd05": "Cortex-A55", "0xd08": "Cortex-A72", "0xd09": "Cortex-A73",
	"0xd0b": "Cortex-A76", "0xd0c": "Neoverse-N1", "0xd40": "Neoverse-V1", "0xd41": "Cortex-A78",
	"0xd46": "Cortex-A510", "0xd47": "Cortex-A710", "0xd49": "Neoverse-N2", "0xd4f": "Neoverse-V2",
	"0xd80": "Cortex-A520", "0xd81": "Cortex-A720",
}

// sysfsCaches reads cpu0's data and unified cache sizes.
func sysfsCaches() Caches {
	var c Caches
	dirs, _ := filepath.Glob(sysRoot + "/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		d = strings.TrimPrefix(d, sysRoot)
		level, _ := readInt(d + "/level")
		typ, _ := readFile(d + "/type")
		size, _ := readFile(d + "/size")
		n := parseCacheSize(strings.TrimSpace(string(size)))
		switch t := strings.TrimSpace(string(typ)); {
		case level == 1 && t == "Data":
			c.L1D = n
		case level == 2 && t != "Instruction":
			c.L2 = n
		case level == 3 && t != "Instruction":
			c.L3 = n
		}
	}
	return c
}

// parseCacheSize parses sysfs sizes such as "32K" and "4M".
func parseCacheSize(s string) int64 {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}

// onlineCPUDirs lists /sys/devices/system/cpu/cpuN of the CPUs with a
// topology directory (offline ones have none).
func onlineCPUDirs() []string {
	dirs, _ := filepath.Glob(sysRoot + "/sys/devices/system/cpu/cpu[0-9]*")
	var out []string
	for _, d := range dirs {
		d = strings.TrimPrefix(d, sysRoot)
		if _, err := os.Stat(sysRoot + d + "/topology"); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// sysfsCores counts physical cores as the distinct sets of hyperthread
// siblings, which works on every architecture.
func sysfsCores() (physical, logical int) {
	seen := map[string]bool{}
	for _, d := range onlineCPUDirs() {
		sib, err := readFile(d + "/topology/core_cpus_list")
		if err != nil {
			sib, err = readFile(d + "/topology/thread_siblings_list")
		}
		if err != nil {
			continue
		}
		logical++
		seen[strings.TrimSpace(string(sib))] = true
	}
	return len(seen), logical
}

// sysfsCapacities counts the CPUs with the highest cpu_capacity (big)
// and the rest (little); 0, 0 when all are alike or it is unknown.
func sysfsCapacities() (big, little int) {
	var caps []int64
	top := int64(0)
	for _, d := range onlineCPUDirs() {
		c, ok := readInt(d + "/cpu_capacity")
		if !ok {
			return 0, 0
		}
		caps = append(caps, c)
		top = max(top, c)
	}
	for _, c := range caps {
		if c == top {
			big++
		} else {
			little++
		}
	}
	if little == 0 {
		return 0, 0
	}
	return big, little
}
