//go:build amd64 && linux && gc && !purego

package kernels_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAMXEncodings: the Go assembler knows no AMX instruction, so the
// generator emits them as bytes with the instruction in a comment
// (kernels/_gen/amx.go). GNU objdump, an independent decoder, must read
// the bytes of every such line in the generated file back as the
// commented instruction. It runs on any amd64 machine, AMX or not; it is
// skipped where objdump is missing or too old to know AMX.
func TestAMXEncodings(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump (binutils) not found; the AMX byte encodings are checked where it is")
	}
	// TILERELEASE first: an objdump that does not decode it knows no AMX.
	probe, err := disassemble(t, objdump, []byte{0xc4, 0xe2, 0x78, 0x49, 0xc0})
	if err != nil {
		t.Skipf("objdump cannot disassemble raw x86-64 code: %v", err)
	}
	if len(probe) != 1 || probe[0] != "tilerelease" {
		t.Skipf("this objdump does not decode AMX instructions (TILERELEASE reads as %q)", probe)
	}
	code, want := amxLines(t, "packk_vnni8_amd64.s")
	if len(want) == 0 {
		t.Fatal("no AMX instructions in packk_vnni8_amd64.s")
	}
	got, err := disassemble(t, objdump, code)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("objdump decodes %d instructions, the file comments %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("instruction %d decodes as %q, its comment says %q", i, got[i], want[i])
		}
	}
}

// disassemble returns objdump's reading of the x86-64 code, one
// instruction a line.
func disassemble(t *testing.T, objdump string, code []byte) ([]string, error) {
	bin := filepath.Join(t.TempDir(), "amx.bin")
	if err := os.WriteFile(bin, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "--no-show-raw-insn", bin).Output()
	if err != nil {
		return nil, err
	}
	var insts []string
	for _, ln := range strings.Split(string(out), "\n") {
		if f := strings.SplitN(ln, "\t", 2); len(f) == 2 && strings.HasSuffix(strings.TrimSpace(f[0]), ":") {
			insts = append(insts, strings.Join(strings.Fields(f[1]), " "))
		}
	}
	return insts, nil
}

// amxLines reads the generated file's BYTE lines and returns their bytes
// and their commented instructions in objdump's AT&T syntax.
func amxLines(t *testing.T, path string) (code []byte, insts []string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ln := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(ln, "BYTE $") {
			continue
		}
		bytes, inst, ok := strings.Cut(ln, " // ")
		if !ok {
			t.Fatalf("%s: a BYTE line without its instruction: %q", path, ln)
		}
		for _, b := range strings.Split(bytes, ";") {
			v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(b), "BYTE $"), 0, 8)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, ln, err)
			}
			code = append(code, byte(v))
		}
		insts = append(insts, atnt(t, inst))
	}
	return code, insts
}

// atnt writes one of the generator's comments (Go operand order, Go
// register names) as objdump prints the instruction.
func atnt(t *testing.T, inst string) string {
	op, args, _ := strings.Cut(inst, " ")
	var ops []string
	for _, a := range strings.Split(args, ", ") {
		if a != "" {
			ops = append(ops, atntOperand(t, a))
		}
	}
	// Go lists sources first and the destination last, as AT&T does.
	if len(ops) == 0 {
		return strings.ToLower(op)
	}
	return strings.ToLower(op) + " " + strings.Join(ops, ",")
}

var memOperand = regexp.MustCompile(`^(-?\d*)\((\w+)\)(?:\((\w+)\*1\))?$`)

func atntOperand(t *testing.T, a string) string {
	if n, ok := strings.CutPrefix(a, "TMM"); ok {
		return "%tmm" + n
	}
	m := memOperand.FindStringSubmatch(a)
	if m == nil {
		t.Fatalf("operand %q not understood", a)
	}
	disp := ""
	if m[1] != "" && m[1] != "0" {
		d, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		disp = fmt.Sprintf("%#x", d)
		if d < 0 {
			disp = fmt.Sprintf("-%#x", -d)
		}
	}
	if m[3] == "" {
		return fmt.Sprintf("%s(%s)", disp, reg64(m[2]))
	}
	return fmt.Sprintf("%s(%s,%s,1)", disp, reg64(m[2]), reg64(m[3]))
}

// reg64 is a Go register name in AT&T syntax.
func reg64(r string) string {
	if strings.HasPrefix(r, "R") {
		return "%" + strings.ToLower(r)
	}
	return "%r" + strings.ToLower(r)
}
