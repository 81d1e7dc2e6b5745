package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/internal/testdata"
)

// TestProbeOneCPUCgroup starts this test binary inside a new cgroup with a
// 1-CPU quota (100000 us per 100000 us period) and checks that siskin
// probe reports the quota and 1 thread, and that serve resolves 1 thread
// from it. Creating a cgroup needs root and a writable cgroup mount; where
// the sandbox forbids it the test skips, and the check is manual:
//
//	systemd-run --scope -p CPUQuota=100% siskin probe --no-bandwidth
//
// must print "cgroup CPU quota 1" and "auto profile ...: 1 thread".
func TestProbeOneCPUCgroup(t *testing.T) {
	model := testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf")
	if os.Getenv("SISKIN_TEST_CGROUP_CHILD") == "1" {
		probe, err := siskin(t, "probe", "--json", "--no-bandwidth")
		if err != nil {
			t.Fatal(err)
		}
		config, err := siskin(t, "serve", "-m", model, "--print-config")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("PROBE %s\nCONFIG\n%s\nEND\n", strings.ReplaceAll(probe, "\n", " "), config)
		return
	}
	dir := oneCPUCgroup(t)
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" -test.run '^TestProbeOneCPUCgroup$' -test.v`, "sh", dir, os.Args[0])
	cmd.Env = append(os.Environ(), "SISKIN_TEST_CGROUP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := regexp.MustCompile(`PROBE (.*)\n`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no probe output in\n%s", out)
	}
	var rep struct {
		Cores struct {
			CgroupCPUs float64 `json:"cgroup_cpus"`
		} `json:"cores"`
		Threads int `json:"threads"`
	}
	if err := json.Unmarshal(m[1], &rep); err != nil {
		t.Fatalf("%v\n%s", err, m[1])
	}
	if rep.Cores.CgroupCPUs != 1 || rep.Threads != 1 {
		t.Errorf("in a 1-CPU cgroup probe reports cgroup_cpus %v and %d threads, want 1 and 1", rep.Cores.CgroupCPUs, rep.Threads)
	}
	if !regexp.MustCompile(`(?m)^threads\s+1\s+auto profile`).Match(out) {
		t.Errorf("serve --print-config does not resolve 1 thread from the auto profile:\n%s", out)
	}
}

// oneCPUCgroup makes a cgroup with a 1-CPU quota (v2 if the unified
// hierarchy has the cpu controller, else v1's cpu hierarchy) and removes
// it at the end; it skips the test when that is not allowed.
func oneCPUCgroup(t *testing.T) string {
	name := fmt.Sprintf("siskin-test-%d", os.Getpid())
	try := func(root string, files map[string]string) string {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return ""
		}
		for _, f := range []string{"cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.max"} {
			if v, ok := files[f]; ok {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
					os.Remove(dir)
					return ""
				}
			}
		}
		t.Cleanup(func() { os.Remove(dir) })
		return dir
	}
	if c, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control"); err == nil && strings.Contains(string(c), "cpu") {
		if dir := try("/sys/fs/cgroup", map[string]string{"cpu.max": "100000 100000"}); dir != "" {
			return dir
		}
	}
	if dir := try("/sys/fs/cgroup/cpu", map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "100000"}); dir != "" {
		return dir
	}
	t.Skip("cannot create a cgroup with a CPU quota here (needs root and a writable cgroup mount); check by hand: systemd-run --scope -p CPUQuota=100% siskin probe --no-bandwidth")
	return ""
}
