package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, h http.Handler, method, target string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIndexAndAssets(t *testing.T) {
	h := Handler()
	res := get(t, h, http.MethodGet, "/", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d", res.StatusCode)
	}
	if got := res.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("index Cache-Control = %q, want no-cache", got)
	}
	if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
		t.Errorf("index Content-Type = %q", got)
	}
	page := string(body(t, res))
	for _, hook := range []string{`data-testid="stream-status"`, `id="board"`} {
		if !strings.Contains(page, hook) {
			t.Errorf("index lacks %s", hook)
		}
	}
	refs := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 2 {
		t.Fatalf("index references %d assets, want a script and a stylesheet: %v", len(refs), refs)
	}
	for _, ref := range refs {
		res := get(t, h, http.MethodGet, ref[1], nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", ref[1], res.StatusCode)
		}
		if got := res.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("%s Cache-Control = %q", ref[1], got)
		}
		want := "text/javascript"
		if strings.HasSuffix(ref[1], ".css") {
			want = "text/css"
		}
		if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, want) {
			t.Errorf("%s Content-Type = %q, want %s", ref[1], got, want)
		}
		plain := body(t, res)

		gz := get(t, h, http.MethodGet, ref[1], map[string]string{"Accept-Encoding": "gzip, br"})
		if gz.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s not gzipped for a gzip client", ref[1])
		}
		zr, err := gzip.NewReader(bytes.NewReader(body(t, gz)))
		if err != nil {
			t.Fatal(err)
		}
		unz, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(unz, plain) {
			t.Fatalf("%s: gzipped body does not match (err %v)", ref[1], err)
		}
		if gz.Header.Get("ETag") == res.Header.Get("ETag") {
			t.Errorf("%s: both encodings share ETag %s", ref[1], res.Header.Get("ETag"))
		}

		nm := get(t, h, http.MethodGet, ref[1], map[string]string{"If-None-Match": res.Header.Get("ETag")})
		if nm.StatusCode != http.StatusNotModified {
			t.Errorf("%s with If-None-Match = %d, want 304", ref[1], nm.StatusCode)
		}
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/nope", "/assets/", "/assets/missing.js", "/dist/index.html"} {
		if res := get(t, h, http.MethodGet, p, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, res.StatusCode)
		}
	}
	if res := get(t, h, http.MethodPost, "/", nil); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", res.StatusCode)
	}
	res := get(t, h, http.MethodHead, "/", nil)
	if res.StatusCode != http.StatusOK || len(body(t, res)) != 0 {
		t.Errorf("HEAD / = %d", res.StatusCode)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for in, want := range map[string]bool{
		"":                   false,
		"gzip":               true,
		"br, gzip;q=0.5":     true,
		"gzip;q=0":           false,
		"GZIP":               true,
		"deflate, identity":  false,
		"x-gzip-ish, br":     false,
		" gzip ; q=1.0 , br": true,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Accept-Encoding", in)
		if got := acceptsGzip(r); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", in, got, want)
		}
	}
}
