package weightpath

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/siskin-ml/siskin/kernels"
	"github.com/siskin-ml/siskin/model"
	"github.com/siskin-ml/siskin/tensor"
)

// W16A16 converts every weight, of any width, to BF16 by rounding to
// nearest even: BF16 values come back unchanged.
func TestW16A16Target(t *testing.T) {
	for _, r := range []model.Role{{Name: "output.weight"}, {Name: "blk.%d.attn_v.weight", Layer: 0, Layers: 8}, {Name: "blk.%d.ffn_up.weight", Layer: 3, Layers: 8}} {
		for _, cols := range []int{100, 2048} {
			if got := Target(W16A16, r, tensor.F32, cols); got != tensor.W16A16 {
				t.Errorf("%s, %d columns: %s, want W16A16", r.Name, cols, got)
			}
		}
	}
	x := []float32{1, -2.5, 0x1.fep+3, 1 + 0x1p-8, 1 + 0x1p-8 + 0x1p-20, float32(math.Inf(-1)), 0}
	want := []uint16{0x3f80, 0xc020, 0x417f, 0x3f80, 0x3f81, 0xff80, 0}
	dst := make([]byte, 2*len(x))
	if err := QuantizeRow(dst, tensor.W16A16, x); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got := binary.LittleEndian.Uint16(dst[2*i:]); got != w {
			t.Errorf("%v: %04x, want %04x", x[i], got, w)
		}
	}
}

// A SIMD tier without AVX-512 BF16 refuses w16a16 with an error that
// says so, rather than running the generic reference; the test pins such
// a tier in a child process (the tier is chosen at start-up).
func TestW16A16Refused(t *testing.T) {
	if os.Getenv("SISKIN_TEST_W16A16_CHILD") == "" {
		var pin string
		for _, tier := range []string{"avx2", "neon"} {
			if slices.Contains(kernels.TiersAvailable(), tier) {
				pin = tier
				break
			}
		}
		if pin == "" {
			t.Skip("no AVX2 or NEON tier to pin on this CPU or build")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestW16A16Refused$", "-test.v")
		cmd.Env = append(os.Environ(), "SISKIN_TEST_W16A16_CHILD=1", kernels.EnvKernels+"="+pin)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refused:") {
			t.Fatalf("child pinned to %s: %v\n%s", pin, err, out)
		}
		return
	}
	_, err := Open("model.gguf", Options{Path: W16A16, CacheDir: "off"})
	if err == nil || !strings.Contains(err.Error(), "AVX-512 BF16") || !strings.Contains(err.Error(), kernels.Tier()) {
		t.Fatalf("w16a16 on the %s tier: error %v", kernels.Tier(), err)
	}
	t.Logf("refused: %v", err)
}
