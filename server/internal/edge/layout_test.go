package edge_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ringcast/ringcast/"

// internalImports is, for every package under server/internal, the
// module's packages its non-test files import.
func internalImports(t *testing.T) map[string][]string {
	t.Helper()
	top, err := filepath.Abs(filepath.Join("..", "..", "..")) // the module's root
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(top, "server", "internal")
	graph := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(top, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := module + filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				graph[pkg] = append(graph[pkg], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// TestFacesDoNotDependOnAuth: the faces reach tokens, grants and client
// identity only through the hub's Admitter, so no face imports edge/auth,
// not even through another package of the module.
func TestFacesDoNotDependOnAuth(t *testing.T) {
	graph := internalImports(t)
	const auth = module + "server/internal/edge/auth"
	var via func(pkg string, seen map[string]bool) []string
	via = func(pkg string, seen map[string]bool) []string {
		if pkg == auth {
			return []string{pkg}
		}
		if seen[pkg] {
			return nil
		}
		seen[pkg] = true
		for _, dep := range graph[pkg] {
			if path := via(dep, seen); path != nil {
				return append([]string{pkg}, path...)
			}
		}
		return nil
	}
	faces := 0
	for pkg := range graph {
		if !strings.HasPrefix(pkg, module+"server/internal/face/") {
			continue
		}
		faces++
		if path := via(pkg, map[string]bool{}); path != nil {
			t.Errorf("%s depends on edge/auth: %s", pkg, strings.Join(path, " → "))
		}
	}
	if faces < 2 {
		t.Fatalf("found %d face packages under server/internal/face; the walk is wrong", faces)
	}
}
