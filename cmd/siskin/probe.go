package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/device"
	"github.com/siskin-ml/siskin/kernels"
)

// probeReport is the --json output: the probe, plus what siskin makes of
// it (the auto profile and the weight path).
type probeReport struct {
	*device.Info
	AutoProfile   string `json:"auto_profile"`
	AutoWhy       string `json:"auto_profile_why"`
	Threads       int    `json:"threads"`
	WeightPath    string `json:"weight_path"`
	WeightPathWhy string `json:"weight_path_why"`
	// KernelTier is the kernel tier in use (kernels.EnvKernels pins it);
	// KernelTiers those this CPU and build can run, preferred first.
	KernelTier  string   `json:"kernel_tier"`
	KernelTiers []string `json:"kernel_tiers"`
	// OneRowTier is the tier whose kernels run decode's one-row products
	// (the AVX2 ones under avx512 where those read memory faster).
	OneRowTier string `json:"one_row_tier"`
}

func probeCmd() *cobra.Command {
	var (
		jsonOut, noBandwidth bool
		threads              int
		duration             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "probe [--json] [--no-bandwidth] [-t N]",
		Short: "Print this machine's CPU features, cores, caches, memory and memory bandwidth",
		Long: `Print what siskin sees of this machine: CPU features (AVX2 to AMX, NEON to SVE),
cores, caches, memory, and the main-memory read bandwidth (a read-only sum over a
buffer several times the L3 size as one stream a thread and as four, alternated
for --duration, the faster's median), which
bounds decode speed: tokens/s <= bandwidth / weight bytes. Also the built-in
profile "auto" would pick and the weight path it would use.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := device.Probe()
			if !noBandwidth {
				b := device.MeasureBandwidthDetail(info, threads, duration)
				info.BandwidthGBs, info.Bandwidth = &b.GBs, &b
			}
			auto := device.AutoProfile(info)
			set := device.Resolve(auto.Layer())
			path, why := set.WeightPath(info)
			rep := probeReport{Info: info, AutoProfile: auto.Base, AutoWhy: auto.Why, Threads: int(set.Int(device.KeyThreads)),
				WeightPath: string(path), WeightPathWhy: why, KernelTier: kernels.Tier(), KernelTiers: kernels.TiersAvailable(), OneRowTier: kernels.OneRowTier()}
			out := cmd.OutOrStdout()
			if jsonOut {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printProbe(out, rep, set)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&jsonOut, "json", false, "print JSON")
	fl.BoolVar(&noBandwidth, "no-bandwidth", false, "skip the memory bandwidth measurement")
	fl.IntVarP(&threads, "threads", "t", 0, "threads for the bandwidth measurement (default: physical cores)")
	fl.DurationVar(&duration, "duration", time.Second, "how long to measure bandwidth")
	return cmd
}

// printProbe writes the probe as a two-column table.
func printProbe(w io.Writer, rep probeReport, set device.Settings) {
	info := rep.Info
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }

	c := info.CPU
	brand := c.Brand
	if brand == "" {
		brand = "unknown CPU"
	}
	if c.Vendor != "" {
		brand += " (" + c.Vendor + ")"
	}
	row("cpu", "%s, %s/%s", brand, c.OS, c.Arch)

	k := info.Cores
	cores := fmt.Sprintf("%d physical, %d logical, %d usable by this process", k.Physical, k.Logical, k.Usable)
	if k.Hybrid {
		if k.Performance > 0 {
			cores += fmt.Sprintf("; hybrid: %d performance + %d efficiency", k.Performance, k.Efficiency)
		} else {
			cores += "; hybrid"
		}
	}
	if k.CgroupCPUs > 0 {
		cores += fmt.Sprintf("; cgroup CPU quota %s", strconv.FormatFloat(k.CgroupCPUs, 'f', -1, 64))
	}
	row("cores", "%s", cores)
	row("caches", "L1d %s, L2 %s, L3 %s", probeBytes(info.Caches.L1D), probeBytes(info.Caches.L2), probeBytes(info.Caches.L3))
	m := info.Memory
	mem := fmt.Sprintf("%s total, %s available", probeBytes(m.TotalBytes), probeBytes(m.AvailableBytes))
	if m.CgroupLimitBytes > 0 {
		mem += fmt.Sprintf(" (cgroup limit %s)", probeBytes(m.CgroupLimitBytes))
	}
	row("memory", "%s", mem)

	// Only the architecture's own features: an x86 machine never has
	// NEON, and listing it as missing says nothing.
	var have, lack []string
	feats := info.Features.Map()
	for _, name := range device.FeatureNamesFor(c.Arch) {
		if feats[name] {
			have = append(have, name)
		} else {
			lack = append(lack, name)
		}
	}
	row("features", "%s", probeList(have))
	row("not present", "%s", probeList(lack))
	if a := info.AMX; a.CPUHas {
		s := fmt.Sprintf("cpu has: yes, XCR0 tile state: %s, OS grants: %s", probeYes(a.XCR0Enabled), probeYes(a.OSGrants))
		if a.Detail != "" {
			s += " (" + a.Detail + ")"
		}
		row("amx", "%s", s)
	}
	if b := info.Bandwidth; b != nil {
		row("read bandwidth", "%.1f GB/s (%s, %s each, median of its %d passes over %s in %.1f s; range %.1f-%.1f)",
			b.GBs, probePlural(b.Threads, "thread"), b.Pattern, b.Passes, probeBytes(b.BufferBytes), b.Duration.Seconds(), b.MinGBs, b.MaxGBs)
	} else {
		row("read bandwidth", "not measured")
	}
	kv := "KV cache sized from the model (memory unknown)"
	if n := set.Int(device.KeyKVCacheBytes); n > 0 {
		kv = "KV cache " + probeBytes(n)
	}
	row("auto profile", "%s (%s): %s, %s, %d sequences, %d batched tokens",
		rep.AutoProfile, rep.AutoWhy, probePlural(rep.Threads, "thread"), kv,
		set.Int(device.KeyMaxNumSeqs), set.Int(device.KeyMaxNumBatchedTokens))
	row("weight path", "%s: %s", rep.WeightPath, rep.WeightPathWhy)
	row("kernel tier", "%s (this CPU runs: %s; %s=TIER pins one)", rep.KernelTier, probeList(rep.KernelTiers), kernels.EnvKernels)
	if rep.OneRowTier != rep.KernelTier {
		row("one-row tier", "%s (decode's one-row products: on this CPU they read memory faster than %s's)", rep.OneRowTier, rep.KernelTier)
	}
	tw.Flush()
}

func probeList(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, " ")
}

func probePlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func probeYes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// probeBytes prints a size in binary units.
func probeBytes(n int64) string {
	switch {
	case n <= 0:
		return "unknown"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
