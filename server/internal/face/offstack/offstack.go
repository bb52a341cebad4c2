// Package offstack runs a long-lived goroutine's deep one-off work on a
// short-lived helper goroutine, so that the long-lived goroutine's stack
// does not grow for it.
//
// A goroutine's stack grows (doubling) whenever a call chain needs more,
// and the runtime shrinks it at GC only while the goroutine uses less than
// a quarter of it. A stream's handler goroutine parks for the stream's whole
// life a few KiB deep (net/http, the handler chain, the hub's wait), so a
// stack grown to 16 KiB once — while protovalidate evaluated the request's
// CEL rules, or while net/http wrote the response headers — stayed 16 KiB
// for as long as the stream was open. Done by Run, that work's stack is the
// helper's, freed when it returns (docs/performance.md, idle streams).
package offstack

// Run runs f on a helper goroutine and waits for it. The caller is blocked
// meanwhile, so f may use whatever the caller owns (the channel orders
// their accesses). A panic in f is raised again on the caller's goroutine,
// where net/http recovers it as it would have, instead of ending the
// process. The cost is one goroutine start.
func Run(f func() error) error {
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if r.panicked {
				r.value = recover()
			}
			done <- r
		}()
		r.panicked = true
		r.err = f()
		r.panicked = false
	}()
	r := <-done
	if r.panicked {
		panic(r.value)
	}
	return r.err
}

type result struct {
	err      error
	panicked bool
	value    any
}
