// Package topic owns how a topic filter entry matches a topic: the rule a
// subscribe's topics filter (package hub), the hub's index of evicted
// topics, a token's grants (package auth) and the load generator's own
// topic share.
package topic

import (
	"iter"
	"strings"
)

// Match reports whether filter entry f matches topic t: t equals f, or f is
// a prefix of t ending at a "/" boundary ("a/b" matches "a/b" and "a/b/c",
// not "a/bc").
func Match(f, t string) bool {
	return t == f || (len(t) > len(f) && t[len(f)] == '/' && strings.HasPrefix(t, f))
}

// Matcher returns a matcher for a topics filter: a topic matches when any
// entry matches it (Match).
func Matcher(filter []string) func(string) bool {
	return func(t string) bool {
		for _, f := range filter {
			if Match(f, t) {
				return true
			}
		}
		return false
	}
}

// Entries yields every filter entry that matches topic t (Match): each
// prefix of t that ends before a "/", shortest first, then t itself ("a",
// "a/b", "a/b/c" for "a/b/c"). An index keyed by entry is filled from it.
func Entries(t string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := range len(t) {
			if t[i] == '/' && !yield(t[:i]) {
				return
			}
		}
		yield(t)
	}
}
