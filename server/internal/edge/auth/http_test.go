package auth_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
)

func TestExtract(t *testing.T) {
	req := func(header, query, cookie string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/events?"+url.Values{names.TokenParam: {query}}.Encode(), nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: auth.CookieName, Value: cookie})
		}
		return r
	}
	for _, c := range []struct {
		header, query, cookie string
		eventSource           bool
		want                  string
	}{
		{"Bearer h", "q", "c", true, "h"},
		{"bearer  h ", "", "", false, "h"},
		{"Basic dXNlcjpwdw==", "q", "", true, "Basic dXNlcjpwdw=="},
		{"", "q", "c", true, "q"},
		{"", "", "c", true, "c"},
		{"", "q", "c", false, ""},
		{"", "", "", true, ""},
	} {
		if got := auth.Extract(req(c.header, c.query, c.cookie), c.eventSource); got != c.want {
			t.Errorf("Extract(%+v) = %q, want %q", c, got, c.want)
		}
	}
}

// FuzzAuthenticate feeds arbitrary Authorization headers, access_token
// parameters and cookies through extraction and verification: never a
// panic, and never an identity unless the token verifies (the seeds
// include a valid one, so the fuzzer starts next to success).
func FuzzAuthenticate(f *testing.F) {
	k := authtest.NewKeys(f)
	v, err := auth.NewVerifier(auth.Config{KeyFile: k.SecretFile})
	if err != nil {
		f.Fatal(err)
	}
	good := k.HS256(f, authtest.Claims("alice", []string{"a"}, []string{"*"}, time.Hour))
	for _, s := range [][3]string{
		{"Bearer " + good, "", ""},
		{"", good, ""},
		{"", "", good},
		{"Bearer", "", ""},
		{"Bearer " + good[:len(good)-3], "x", "y"},
		{"Bearer eyJhbGciOiJub25lIn0.eyJleHAiOjk5OTk5OTk5OTl9.", "", ""},
		{"", "%zz", "a=b; ringcast_token"},
		{"Bearer a.b.c.d", "a.b", "....."},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, header, query, cookie string) {
		r := httptest.NewRequest(http.MethodGet, "/events", nil)
		r.URL.RawQuery = names.TokenParam + "=" + query
		r.Header.Set("Authorization", header)
		r.Header.Set("Cookie", auth.CookieName+"="+cookie)
		for _, es := range []bool{false, true} {
			id, aerr := v.Authenticate(r, es)
			if (id == nil) == (aerr == nil) {
				t.Fatalf("identity %v and error %v", id, aerr)
			}
			if aerr != nil {
				var e *auth.Error
				if !errors.As(aerr, &e) || e.Reason == "" || e.Error() == "" {
					t.Fatalf("refusal %#v", aerr)
				}
			}
			if id != nil {
				if _, verr := v.Verify(auth.Extract(r, es)); verr != nil {
					t.Fatalf("authenticated, but the extracted token does not verify: %v", verr)
				}
			}
		}
	})
}
