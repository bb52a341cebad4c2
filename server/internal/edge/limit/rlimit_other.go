//go:build !unix

package limit

// OpenFileLimit is a generous fixed bound where there is no RLIMIT_NOFILE.
func OpenFileLimit() int { return 1 << 16 }
