// Package web is siskin's built-in chat page: one HTML document, with its
// style sheet and script inlined, embedded in the binary and served at
// GET /. It loads nothing from elsewhere and calls the API by relative
// URLs, so it works behind a reverse proxy that mounts the server under a
// path prefix.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"strings"
)

//go:embed index.html style.css app.js
var files embed.FS

// page is index.html with style.css and app.js put in place of their
// markers; csp allows exactly those two inline blocks (by hash), so text
// a model writes can never run as script even if it reached the DOM.
var page, csp = build()

func build() ([]byte, string) {
	read := func(name string) string {
		b, err := files.ReadFile(name)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		return string(b)
	}
	css, js := read("style.css"), read("app.js")
	html := strings.Replace(read("index.html"), "/*STYLE*/", css, 1)
	html = strings.Replace(html, "/*SCRIPT*/", js, 1)
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	policy := "default-src 'none'; connect-src 'self'; img-src 'self' data:; media-src 'self' blob:; " +
		"style-src " + hash(css) + "; script-src " + hash(js) + "; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
	return []byte(html), policy
}

// Handler serves the page. It needs no API key: the page asks for one
// when the API answers 401.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		w.Write(page)
	})
}
