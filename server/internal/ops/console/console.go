// Package console serves ringcast's web console: a single page (built from
// web/ with esbuild into dist/, which is committed so that `go build` works
// on a fresh clone) that subscribes over gRPC-Web and shows the demo feed's
// river gauges, the stream's state and the client's cursor.
//
// Rebuild dist/ after changing web/ or clients/ts/src with
// `npm run build:console` in clients/ts; `npm run check:console` fails when
// the committed dist/ is stale.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed all:dist
var dist embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	gzipped     []byte // nil when compression does not pay
	contentType string
	etag        string
	cache       string
}

var (
	assetsOnce sync.Once
	assets     map[string]*asset // by URL path
)

// Handler serves the console: index.html at "/" and "/index.html" (revalidated on every
// load, so a new server's page is picked up at once) and the content-hashed
// files under "/assets/" (cached for a year, immutable). Anything else is
// 404. It answers GET and HEAD only.
func Handler() http.Handler {
	assetsOnce.Do(load)
	return http.HandlerFunc(serve)
}

func load() {
	assets = make(map[string]*asset)
	err := fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := dist.ReadFile(p)
		if err != nil {
			return err
		}
		urlPath := strings.TrimPrefix(p, "dist")
		sum := sha256.Sum256(body)
		a := &asset{
			body:        body,
			contentType: mime.TypeByExtension(path.Ext(p)),
			etag:        `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
			cache:       "public, max-age=31536000, immutable",
		}
		if a.contentType == "" {
			a.contentType = http.DetectContentType(body)
		}
		if urlPath == "/index.html" {
			a.cache = "no-cache"
			a.contentType = "text/html; charset=utf-8"
		}
		a.gzipped = compress(body)
		assets[urlPath] = a
		return nil
	})
	if err != nil {
		panic("console: reading embedded dist: " + err.Error()) // the embed is fixed at build time
	}
}

// compress returns body gzipped, or nil when that saves less than a tenth.
func compress(body []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	if b.Len() > len(body)*9/10 {
		return nil
	}
	return b.Bytes()
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "/" {
		p = "/index.html"
	}
	a, ok := assets[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", a.cache)
	h.Set("X-Content-Type-Options", "nosniff")
	if p == "/index.html" {
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
	}
	body, etag := a.body, a.etag
	if a.gzipped != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
			body, etag = a.gzipped, strings.TrimSuffix(etag, `"`)+`-gz"`
		}
	}
	h.Set("ETag", etag)
	// ServeContent handles If-None-Match (304), HEAD and ranges.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether the request's Accept-Encoding admits gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
