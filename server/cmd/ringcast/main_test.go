package main

import (
	"encoding/json"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childArgsEnv, when set, makes the test binary run ringcast with the
// JSON-encoded arguments it holds instead of the tests: a real ringcast
// process that a test can kill -9.
const childArgsEnv = "RINGCAST_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if a := os.Getenv(childArgsEnv); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			os.Exit(3)
		}
		os.Exit(run(args, os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
