//go:build race

package faults_test

// raceEnabled: the race detector slows the storm several times over.
const raceEnabled = true
