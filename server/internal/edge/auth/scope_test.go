package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/edge/auth"
)

// TestClientID: a request is accounted to "sub:" and its token's subject
// with auth, else to "ip:" and its remote host; AppendClientID appends the
// same id, whatever its length.
func TestClientID(t *testing.T) {
	long := strings.Repeat("s", 100) // past ClientID's stack buffer
	withSub := func(sub string) context.Context {
		return auth.WithIdentity(context.Background(), &auth.Identity{Subject: sub})
	}
	for _, tc := range []struct {
		ctx        context.Context
		remoteAddr string
		want       string
	}{
		{context.Background(), "10.0.0.1:5000", "ip:10.0.0.1"},
		{context.Background(), "[::1]:443", "ip:::1"},
		{context.Background(), "not-host-port", "ip:not-host-port"},
		{withSub("alice"), "10.0.0.1:5000", "sub:alice"},
		{withSub(long), "10.0.0.1:5000", "sub:" + long},
	} {
		if got := auth.ClientID(tc.ctx, tc.remoteAddr); got != tc.want {
			t.Errorf("ClientID(%s) = %q, want %q", tc.remoteAddr, got, tc.want)
		}
		if got := string(auth.AppendClientID([]byte("x"), tc.ctx, tc.remoteAddr)); got != "x"+tc.want {
			t.Errorf("AppendClientID(x, %s) = %q, want %q", tc.remoteAddr, got, "x"+tc.want)
		}
	}
}

// TestMaySubscribeAll: without auth every topic; with a token, only when
// its subscribe grant covers every topic given, as a stream's scope does.
func TestMaySubscribeAll(t *testing.T) {
	if !auth.MaySubscribeAll(context.Background(), []string{"a", "b"}) {
		t.Fatal("without auth: refused")
	}
	id := func(grant ...string) context.Context {
		return auth.WithIdentity(context.Background(), &auth.Identity{Subject: "s", Subscribe: grant})
	}
	for _, tc := range []struct {
		ctx    context.Context
		topics []string
		want   bool
	}{
		{id("*"), []string{"a/1", "b"}, true},
		{id("a", "b"), []string{"a/1", "b"}, true},
		{id("a"), []string{"a/1", "b"}, false},
		{id("a/1"), []string{"a/1", "a/2"}, false},
		{id(), []string{"a"}, false},
		{id("a"), nil, true},
	} {
		if got := auth.MaySubscribeAll(tc.ctx, tc.topics); got != tc.want {
			t.Errorf("MaySubscribeAll(%v) = %v, want %v", tc.topics, got, tc.want)
		}
	}
}
