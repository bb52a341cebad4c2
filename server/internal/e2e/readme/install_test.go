package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallWorksBeforeARelease: the README's Install section starts with
// what works at every commit, a build from a clone; `go install …@version`
// comes after it, as what works once a release is published (the
// development go.mod's replace lines make go install refuse before).
func TestInstallWorksBeforeARelease(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(md), "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no Install section")
	}
	if end := strings.Index(sec, "\n## "); end >= 0 {
		sec = sec[:end]
	}
	_, first, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		t.Fatal("the Install section has no sh block")
	}
	first, _, _ = strings.Cut(first, "```")
	if !strings.Contains(first, "git clone ") || !strings.Contains(first, "go build -o bin/ringcast ./server/cmd/ringcast") {
		t.Errorf("the Install section's first block does not build from a clone (git clone, then go build -o bin/ringcast ./server/cmd/ringcast):\n%s", first)
	}
	if strings.Contains(first, "go install") {
		t.Errorf("the Install section's first block uses go install, which refuses before a release is published:\n%s", first)
	}
	before, _, ok := strings.Cut(sec, "go install github.com/ringcast/ringcast/server/cmd/ringcast@")
	if ok && !strings.Contains(before, "release is published") {
		t.Error("the Install section offers go install without saying it needs a published release")
	}
}
