package hub

import (
	"strings"
	"testing"
)

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"hf://Qwen/Qwen3-0.6B-GGUF:Q8_0", "hf://a/b@refs/pr/1", "org/repo:q4@v1", "hf://a/../b", "hf://a/b@x/../../y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		for _, p := range append(strings.Split(r.Repo, "/"), strings.Split(r.Rev(), "/")...) {
			if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "\\\x00") {
				t.Fatalf("%q parsed to an unsafe path part %q", s, p)
			}
		}
		if r2, err := ParseRef(r.String()); err != nil || r2 != r {
			t.Fatalf("%q: round trip %q gives %+v, %v", s, r.String(), r2, err)
		}
	})
}

func FuzzParseRepoInfo(f *testing.F) {
	sha := strings.Repeat("ab", 20)
	f.Add([]byte(`{"id":"a/b","sha":"` + sha + `","siblings":[{"rfilename":"x.gguf","size":3,"blobId":"` + sha + `","lfs":{"sha256":"00","size":3}}]}`))
	f.Add([]byte(`{"sha":"` + sha + `","siblings":[{"rfilename":"../x"}]}`))
	f.Add([]byte(`{"sha":1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		info, err := ParseRepoInfo(raw)
		if err != nil {
			return
		}
		if !isCommit(info.SHA) {
			t.Fatalf("accepted sha %q", info.SHA)
		}
		names := make([]string, len(info.Siblings))
		for i, s := range info.Siblings {
			if checkFileName(s.Name) != nil {
				t.Fatalf("accepted file name %q", s.Name)
			}
			names[i] = s.Name
		}
		// Choosing files from any listing errors or names listed files.
		for _, q := range []string{"", "Q4_K_M"} {
			p, err := choose(Ref{Repo: "a/b", Quant: q}, names)
			if err == nil && p.model != "" && !strings.HasSuffix(strings.ToLower(p.model), ".gguf") {
				t.Fatalf("chose %q as a GGUF", p.model)
			}
		}
	})
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"/etc/passwd"}}`))
	f.Add([]byte(`{"weight_map":{}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		shards, err := ParseIndex(raw)
		if err != nil {
			return
		}
		for _, s := range shards {
			if checkFileName(s) != nil {
				t.Fatalf("accepted shard %q", s)
			}
		}
	})
}
