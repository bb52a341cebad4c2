package ringcast_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// serverModules are modules the server needs and a client consumer must
// never be made to take in.
var serverModules = []string{
	"github.com/nats-io/",
	"github.com/prometheus/",
	"go.opentelemetry.io/otel/sdk",
	"github.com/golang-jwt/",
	"github.com/ringcast/ringcast ", // the server's module itself
}

// goCommand runs the go command in dir outside any workspace, as a
// consumer's build does, and returns its standard output.
func goCommand(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out)
}

// checkModules fails for a server module in a `go list -m all` listing.
func checkModules(t *testing.T, who, listing string) {
	t.Helper()
	for _, line := range strings.Split(listing, "\n") {
		for _, m := range serverModules {
			if strings.HasPrefix(line+" ", m) {
				t.Errorf("%s's module graph holds %q, a server dependency", who, line)
			}
		}
	}
}

// The client module needs connect, protobuf and the generated code only,
// and asks for no newer Go than its code uses.
func TestClientModuleIsFreeOfServerDependencies(t *testing.T) {
	checkModules(t, "the client module", goCommand(t, "..", "list", "-m", "all"))
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(line, "go 1."); ok {
			minor, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
			if minor > 25 {
				t.Errorf("go.mod says %q: a consumer's go directive would be raised past 1.25", line)
			}
		}
	}
}

// A module outside this repository builds against the client with nothing
// but replace directives to the local paths (the client module and the
// generated code it requires).
func TestExternalConsumerBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module (downloads from the module proxy when the cache lacks what it needs)")
	}
	client, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(client, "..", "..", "gen", "go")
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/gauges\n\ngo 1.24\n\n"+
		"require github.com/ringcast/ringcast/clients/go v0.0.0\n\n"+
		"replace github.com/ringcast/ringcast/clients/go => "+client+"\n"+
		"replace github.com/ringcast/ringcast/gen/go => "+gen+"\n")
	write("main.go", `package main

import (
	"context"
	"fmt"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

func main() {
	c := ringcast.NewClient("http://127.0.0.1:8080", ringcast.WithProtocol(ringcast.ProtocolGRPC))
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for it, err := range c.Subscribe(ringcast.WithTopics("gauges")).Items(ctx) {
		fmt.Println(it.Fact.GetTopic(), err)
		break
	}
	_, _ = c.Commit(ctx, []*ringcastv1.Fact{{Topic: "gauges/g-014", Type: "gauge.level"}})
}
`)
	goCommand(t, dir, "mod", "tidy")
	goCommand(t, dir, "build", "-o", filepath.Join(dir, "gauges"), ".")
	checkModules(t, "a consumer", goCommand(t, dir, "list", "-m", "all"))
}
