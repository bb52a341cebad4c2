//go:build linux

package rpc_test

import "syscall"

// processCPU is the CPU time (user + system) of the whole process so far.
func processCPU() (ns int64, ok bool) { return rusageCPU(syscall.RUSAGE_SELF) }

func rusageCPU(who int) (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
