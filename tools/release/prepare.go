package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// The repository's modules besides tools. The root module requires both
// others, the client module requires the generated code; during development
// `replace` lines (and go.work) point each at its directory.
const (
	rootModule   = "github.com/ringcast/ringcast"
	clientModule = rootModule + "/clients/go"
	genModule    = rootModule + "/gen/go"
)

// A nested module: its path and its directory (also its tag prefix:
// clients/go/v0.1.0).
type nested struct{ path, dir string }

var (
	genMod    = nested{genModule, "gen/go"}
	clientMod = nested{clientModule, "clients/go"}
)

// Prepare makes the work tree at root the release commit of version: the
// client's and the root's go.mod drop their replace lines and require the
// sibling modules at version (the tags gen/go/VERSION, clients/go/VERSION
// and VERSION, all to be cut on that commit), and their go.sum files gain
// those modules' checksums. `go install …@VERSION` and `go get
// …/clients/go@VERSION` refuse or cannot resolve a module whose go.mod
// needs a replace; the release commit has none.
//
// The checksums are computed before the tags exist: each sibling module
// is zipped from the work tree as the module proxy will zip it from the
// tag (the tracked files of its directory, and the repository's LICENSE
// when it has none of its own) and served to `go mod tidy` from a
// temporary file proxy. The tree must be clean, so that what is zipped is
// what gets committed.
func Prepare(ctx context.Context, root, version string) error {
	if dirty := gitOutput(ctx, root, "status", "--porcelain"); dirty != "" {
		return fmt.Errorf("the work tree has changes; commit or stash them first:\n%s", dirty)
	}
	proxy, err := os.MkdirTemp("", "ringcast-proxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(proxy)
	return prepare(ctx, root, version, proxy)
}

// prepare is Prepare with the file proxy's directory given.
func prepare(ctx context.Context, root, version, proxy string) error {
	if err := addToProxy(ctx, root, proxy, genMod, version); err != nil {
		return err
	}
	if err := goMod(ctx, filepath.Join(root, clientMod.dir), proxy,
		"-dropreplace="+genModule, "-require="+genModule+"@"+version); err != nil {
		return err
	}
	if err := addToProxy(ctx, root, proxy, clientMod, version); err != nil {
		return err
	}
	return goMod(ctx, root, proxy,
		"-dropreplace="+genModule, "-dropreplace="+clientModule,
		"-require="+genModule+"@"+version, "-require="+clientModule+"@"+version)
}

// Restore puts the replace lines back after the release commit, so that the
// modules build from their directories again without go.work (the require
// lines keep naming the last release).
func Restore(ctx context.Context, root string) error {
	if err := goMod(ctx, filepath.Join(root, clientMod.dir), "",
		"-replace="+genModule+"=../../gen/go"); err != nil {
		return err
	}
	path := filepath.Join(root, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return err
	}
	for _, m := range []string{clientModule, genModule} {
		if err := f.DropReplace(m, ""); err != nil {
			return err
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return err
	}
	out = append(bytes.TrimRight(out, "\n"), "\n\n"+rootReplaceBlock...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	return goMod(ctx, root, "")
}

// rootReplaceBlock is how the root go.mod points at the sibling modules
// between releases.
const rootReplaceBlock = `// The Go client and the generated code are modules of their own in this
// repository (go.work joins them for development).
replace (
	github.com/ringcast/ringcast/clients/go => ./clients/go
	github.com/ringcast/ringcast/gen/go => ./gen/go
)
`

// goMod runs `go mod edit EDITS` then `go mod tidy` in dir, outside the
// workspace; with proxy, the sibling modules come from that file proxy and
// are not looked up in the checksum database (they are not published yet).
func goMod(ctx context.Context, dir, proxy string, edits ...string) error {
	env := append(os.Environ(), "GOWORK=off")
	if proxy != "" {
		up := os.Getenv("GOPROXY")
		if up == "" {
			up = strings.TrimSpace(goEnv(ctx, "GOPROXY"))
		}
		env = append(env,
			"GOPROXY=file://"+filepath.ToSlash(proxy)+","+up,
			"GONOSUMDB="+joinList(os.Getenv("GONOSUMDB"), rootModule))
	}
	cmds := [][]string{{"mod", "tidy"}}
	if len(edits) > 0 {
		cmds = append([][]string{append([]string{"mod", "edit"}, edits...)}, cmds...)
	}
	for _, args := range cmds {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = dir, env
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, b)
		}
	}
	return nil
}

func joinList(list, item string) string {
	if list == "" {
		return item
	}
	return list + "," + item
}

func goEnv(ctx context.Context, name string) string {
	b, _ := exec.CommandContext(ctx, "go", "env", name).Output()
	return string(b)
}

// addToProxy writes module m at version into the file proxy dir: its
// .info, .mod and .zip, as the module proxy would serve them from the tag.
func addToProxy(ctx context.Context, root, proxy string, m nested, version string) error {
	files, err := moduleFiles(ctx, root, m.dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	mv := module.Version{Path: m.path, Version: version}
	if err := modzip.Create(&buf, mv, files); err != nil {
		return fmt.Errorf("zipping %s: %w", m.path, err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, m.dir, "go.mod"))
	if err != nil {
		return err
	}
	esc, err := module.EscapePath(m.path)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	info := fmt.Sprintf(`{"Version":%q,"Time":%q}`, version, time.Now().UTC().Format(time.RFC3339))
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": []byte(info),
		version + ".mod":  gomod,
		version + ".zip":  buf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// moduleFiles are the files of the module in dir (relative to root) the
// module proxy zips from a tag: git's tracked files there, less those of
// modules nested below it, and the repository's LICENSE when the module
// has none of its own.
func moduleFiles(ctx context.Context, root, dir string) ([]modzip.File, error) {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "--", dir)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files %s: %w", dir, err)
	}
	var names []string
	nestedDirs := map[string]bool{}
	for _, n := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if n == "" {
			continue
		}
		names = append(names, n)
		if path.Base(n) == "go.mod" && path.Dir(n) != dir {
			nestedDirs[path.Dir(n)] = true
		}
	}
	var files []modzip.File
	haveLicense := false
	for _, n := range names {
		if inNested(n, nestedDirs) {
			continue
		}
		rel := strings.TrimPrefix(n, dir+"/")
		if rel == "LICENSE" {
			haveLicense = true
		}
		files = append(files, treeFile{rel: rel, abs: filepath.Join(root, filepath.FromSlash(n))})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no tracked files", dir)
	}
	if !haveLicense {
		files = append(files, treeFile{rel: "LICENSE", abs: filepath.Join(root, "LICENSE")})
	}
	return files, nil
}

func inNested(name string, dirs map[string]bool) bool {
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		if dirs[d] {
			return true
		}
	}
	return false
}

// treeFile is a file of the work tree, for modzip.Create.
type treeFile struct{ rel, abs string }

func (f treeFile) Path() string                 { return f.rel }
func (f treeFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(f.abs) }
func (f treeFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
