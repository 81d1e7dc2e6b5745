package hub

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Progress reports downloads, one FileBar per file.
type Progress interface {
	// File starts reporting a download of total bytes (0: unknown) that
	// resumes after done bytes.
	File(name string, total, done int64) FileBar
}

// FileBar follows one file's download.
type FileBar interface {
	Add(n int)
	Done(ok bool)
}

type nopBar struct{}

func (nopBar) Add(int)   {}
func (nopBar) Done(bool) {}

// NewProgress draws an mpb bar per file (bytes, rate, ETA) when w is a
// terminal, and otherwise writes plain lines: start, every 25%, end.
// Call Wait when the downloads are over.
func NewProgress(w io.Writer) *TermProgress {
	p := &TermProgress{w: w}
	if f, ok := w.(*os.File); ok {
		st, err := f.Stat()
		p.term = err == nil && st.Mode()&os.ModeCharDevice != 0
	}
	return p
}

// TermProgress is NewProgress's Progress.
type TermProgress struct {
	w    io.Writer
	term bool
	bars *mpb.Progress // made at the first download
	mu   sync.Mutex
}

// Wait lets the bars draw their last state.
func (p *TermProgress) Wait() {
	p.mu.Lock()
	bars := p.bars
	p.mu.Unlock()
	if bars != nil {
		bars.Wait()
	}
}

// File implements Progress.
func (p *TermProgress) File(name string, total, done int64) FileBar {
	if !p.term {
		l := &lineBar{p: p, name: name, total: total, done: done, start: time.Now(), next: nextQuarter(done, total)}
		if done > 0 {
			l.line(fmt.Sprintf("%s, resuming after %s", size(total), size(done)))
		} else {
			l.line(size(total))
		}
		return l
	}
	p.mu.Lock()
	if p.bars == nil {
		p.bars = mpb.New(mpb.WithOutput(p.w), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond))
	}
	p.mu.Unlock()
	b := p.bars.AddBar(total,
		mpb.PrependDecorators(decor.Name(name+" "), decor.Counters(decor.SizeB1024(0), "% .1f / % .1f")),
		mpb.AppendDecorators(decor.AverageSpeed(decor.SizeB1024(0), " % .1f", decor.WCSyncSpace), decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)))
	b.SetCurrent(done)
	return &mpbBar{b: b}
}

type mpbBar struct{ b *mpb.Bar }

func (m *mpbBar) Add(n int) { m.b.IncrBy(n) }
func (m *mpbBar) Done(ok bool) {
	if !m.b.Completed() {
		m.b.Abort(!ok)
	}
}

type lineBar struct {
	p                 *TermProgress
	name              string
	total, done, next int64
	start             time.Time
}

func nextQuarter(done, total int64) int64 {
	if total <= 0 {
		return 1 << 62
	}
	return (done*4/total + 1) * total / 4
}

func (l *lineBar) Add(n int) {
	l.done += int64(n)
	if l.done >= l.next && l.done < l.total {
		l.next = nextQuarter(l.done, l.total)
		l.line(fmt.Sprintf("%d%% (%s of %s)", l.done*100/l.total, size(l.done), size(l.total)))
	}
}

func (l *lineBar) Done(ok bool) {
	el := time.Since(l.start)
	rate := float64(l.done) / max(el.Seconds(), 1e-3)
	if ok {
		l.line(fmt.Sprintf("done, %s in %s (%s/s)", size(l.done), el.Round(time.Millisecond), size(int64(rate))))
	} else {
		l.line(fmt.Sprintf("stopped at %s", size(l.done)))
	}
}

func (l *lineBar) line(s string) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	fmt.Fprintf(l.p.w, "download %s: %s\n", l.name, s)
}

// size writes n bytes in binary units.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
