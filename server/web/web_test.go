package web

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestPageSelfContained checks what the browser test cannot see from one
// origin: the page names no other host, loads no file by URL (style and
// script are inline), and its CSP allows exactly those inline blocks.
func TestPageSelfContained(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET / = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	if strings.Contains(body, "/*STYLE*/") || strings.Contains(body, "/*SCRIPT*/") {
		t.Fatal("style or script marker left in the page")
	}
	for _, re := range []string{`(?i)\b(src|href)\s*=\s*["']?(https?:)?//`, `(?i)<script[^>]*\bsrc=`, `(?i)<link[^>]*stylesheet`, `@import`, `['"]/(v1|metrics|health|tokenize|detokenize)\b`} {
		if m := regexp.MustCompile(re).FindString(body); m != "" {
			t.Errorf("page loads from elsewhere or by absolute URL: %q matches %s", m, re)
		}
	}
	policy := rec.Header().Get("Content-Security-Policy")
	if strings.Count(policy, "'sha256-") != 2 || !strings.Contains(policy, "default-src 'none'") || !strings.Contains(policy, "connect-src 'self'") {
		t.Fatalf("Content-Security-Policy %q", policy)
	}
}
