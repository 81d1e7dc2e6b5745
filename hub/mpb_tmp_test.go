package hub

import (
	"os"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8"
)

func TestMpbTmp(t *testing.T) {
	p := mpb.New(mpb.WithOutput(os.Stderr), mpb.WithWidth(40))
	b := p.AddBar(100)
	for i := 0; i < 10; i++ {
		b.IncrBy(10)
		time.Sleep(50 * time.Millisecond)
	}
	p.Wait()
}
