package mmap

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// writeLog records the offset and length of every write it gets.
type writeLog struct {
	bytes.Buffer
	start  int64
	writes [][2]int64
}

func (l *writeLog) Write(p []byte) (int, error) {
	l.writes = append(l.writes, [2]int64{l.start + int64(l.Len()), int64(len(p))})
	return l.Buffer.Write(p)
}

func TestWriterChunks(t *testing.T) {
	for _, start := range []int64{0, 4096, Chunk - 1, 3*Chunk + 12345} {
		r := rand.New(rand.NewPCG(1, uint64(start)))
		want := make([]byte, 5*Chunk+777)
		for i := range want {
			want[i] = byte(r.Uint32())
		}
		log := &writeLog{start: start}
		w := NewWriter(log, start)
		flushed := map[int]bool{} // writes that a Flush ended
		for piece := 0; ; piece++ {
			rest := want[log.Len()+w.n:]
			if len(rest) == 0 {
				break
			}
			// Pieces of every size, from a few bytes to over a chunk.
			n := min(len(rest), 1+r.IntN(3*Chunk/2))
			if r.IntN(4) == 0 {
				n = min(len(rest), 1+r.IntN(64))
			}
			if k, err := w.Write(rest[:n]); k != n || err != nil {
				t.Fatalf("start %d: Write = %d, %v", start, k, err)
			}
			if piece == 2 || r.IntN(8) == 0 {
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				flushed[len(log.writes)-1] = true
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if len(flushed) == 0 {
			t.Fatalf("start %d: no Flush in the middle", start)
		}
		if !bytes.Equal(log.Bytes(), want) {
			t.Fatalf("start %d: bytes differ", start)
		}
		for i, wr := range log.writes {
			off, n := wr[0], wr[1]
			end := off + n
			last := i == len(log.writes)-1
			if (i > 0 && !flushed[i-1] && off%Chunk != 0) || (!last && !flushed[i] && end%Chunk != 0) || n > Chunk {
				t.Errorf("start %d: write %d at %d of %d bytes: not a whole aligned chunk", start, i, off, n)
			}
		}
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestWriterKeepsFirstError(t *testing.T) {
	w := NewWriter(&failWriter{after: 1}, 0)
	p := make([]byte, Chunk)
	if _, err := w.Write(p); err != nil {
		t.Fatalf("first chunk: %v", err)
	}
	if _, err := w.Write(p); err == nil || err.Error() != "disk full" {
		t.Fatalf("second chunk: err %v, want disk full", err)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush after a failed write returned nil")
	}
}
