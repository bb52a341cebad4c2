package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ringcast/ringcast/tools/internal/benchkit"
)

func TestParseDefaults(t *testing.T) {
	c, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{replicas: 3, rate: 2000, duration: 20 * time.Second, size: 100, inflight: 256, consumeFrom: "leader", drain: 10 * time.Second}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if c.messages() != 40000 {
		t.Fatalf("messages %d, want 40000", c.messages())
	}
}

func TestParseAccepts(t *testing.T) {
	c, err := parse([]string{"-replicas", "1", "-rate", "500", "-duration", "3s", "-size", "16", "-async", "-inflight", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.replicas != 1 || c.messages() != 1500 || !c.async || c.size != 16 {
		t.Fatalf("parsed %+v", c)
	}
	if _, err := parse([]string{"-consume-from", "follower"}, io.Discard); err != nil {
		t.Fatalf("follower with R3: %v", err)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-replicas", "2"}, "-replicas must be 1 or 3"},
		{[]string{"-replicas", "0"}, "-replicas must be 1 or 3"},
		{[]string{"-rate", "0"}, "-rate must be"},
		{[]string{"-rate", "-5"}, "-rate must be"},
		{[]string{"-duration", "0s"}, "-duration must be positive"},
		{[]string{"-duration", "11m"}, "at most 10m"},
		{[]string{"-size", "15"}, "-size must be 16"},
		{[]string{"-inflight", "0"}, "-inflight must be"},
		{[]string{"-consume-from", "any"}, "-consume-from must be leader or follower"},
		{[]string{"-replicas", "1", "-consume-from", "follower"}, "needs -replicas 3"},
		{[]string{"-drain", "0s"}, "-drain must be positive"},
		{[]string{"-rate", "1", "-duration", "100ms"}, "less than one message"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-rate", "fast"}, "invalid value"},
		{[]string{"-nope"}, "not defined"},
	} {
		_, err := parse(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestPackageCommentListsEveryFlag keeps the package comment's flag list
// in step with the flag set.
func TestPackageCommentListsEveryFlag(t *testing.T) {
	var c config
	missing, err := benchkit.UndocumentedFlags("main.go", flags(&c))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range missing {
		t.Errorf("the package comment does not list -%s", name)
	}
}
