//go:build linux

package hub_test

import "syscall"

// rusageThread is RUSAGE_THREAD (Linux): the calling thread only.
const rusageThread = 1

// processCPU is the CPU time (user + system) of the whole process so far.
func processCPU() (ns int64, ok bool) { return rusageCPU(syscall.RUSAGE_SELF) }

// threadCPU is the CPU time of the calling OS thread; the caller locks its
// goroutine to the thread (runtime.LockOSThread) so the figure is its own.
func threadCPU() (ns int64, ok bool) { return rusageCPU(rusageThread) }

func rusageCPU(who int) (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
