//go:build unix

package limit

import "syscall"

// OpenFileLimit is the process's open-file limit. The Go runtime raises
// the soft limit to the hard limit at start on Unix, so this is the hard
// limit unless something lowered it since.
func OpenFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 1 << 20
	}
	return int(rl.Cur)
}
