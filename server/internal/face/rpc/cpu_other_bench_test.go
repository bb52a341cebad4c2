//go:build !linux

package rpc_test

// CPU time is measured on Linux only; elsewhere the CPU metrics are omitted.
func processCPU() (int64, bool) { return 0, false }
