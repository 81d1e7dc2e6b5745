package weightpath

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A fingerprint identifies the source model's bytes without reading them
// all (hashing a 1 GB file at every start would take longer than the
// start itself): per file its name, size, modification time, and CRC-32C
// of its first MiB (the GGUF header and tensor table, or a safetensors
// header) and of 16 evenly spaced 64 KiB windows. A file rewritten in
// place with the same size and time stamp and changes only outside those
// windows would go unnoticed; any copy, download or re-quantization
// changes the time stamp or the sampled bytes.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func fingerprint(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	files := []string{path}
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return "", err
		}
		files = files[:0]
		for _, e := range ents {
			n := e.Name()
			if !e.IsDir() && (strings.HasSuffix(n, ".safetensors") || strings.HasSuffix(n, ".json")) {
				files = append(files, filepath.Join(path, n))
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return "", fmt.Errorf("%s: no safetensors or json files", path)
		}
	}
	h := sha256.New()
	for _, f := range files {
		if err := fileFingerprint(h, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fileFingerprint(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	fmt.Fprintf(w, "%s\x00%d\x00%d\x00", filepath.Base(path), size, st.ModTime().UnixNano())
	buf := make([]byte, 1<<20)
	sample := func(off int64, n int) error {
		n = int(min(int64(n), size-off))
		if n <= 0 {
			return nil
		}
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return binary.Write(w, binary.LittleEndian, crc32.Checksum(buf[:n], castagnoli))
	}
	if err := sample(0, len(buf)); err != nil {
		return err
	}
	const windows, window = 16, 64 << 10
	for i := int64(1); i <= windows; i++ {
		if err := sample(size*i/(windows+1), window); err != nil {
			return err
		}
	}
	return nil
}
