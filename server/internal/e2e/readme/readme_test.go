// Package readme runs the README's quick-start against a fresh build, so
// that the README cannot drift from what the binary, the Go client, the
// TypeScript client and the Python client do.
//
// Which blocks run (the same rule is written at the top of README.md):
//
//   - A line `<!-- readme-test: run -->` under a heading marks that heading's
//     section: every fenced code block from there to the next heading of the
//     same or a higher level runs, sub-sections included. A line added to one
//     of those blocks, or a block added to one of those sections, is tested
//     with no further marking.
//   - A line `<!-- readme-test: skip (reason) -->` just before a block leaves
//     that block out (a browser-only snippet).
//   - sh blocks: each command (a line, with the lines it continues: a trailing
//     `\`, `|`, `&&` or `||`, or a for/while loop up to its `done`) runs with
//     bash in a scratch directory where `bin/ringcast` and `ringcast` are the
//     fresh build, node_modules and clients are the repository's, and
//     python3 is Debian's (/usr/bin/python3, when there is one). Comment lines are
//     skipped; a `NAME=value` line is kept for the block's later commands. A
//     command must exit 0; a stream that never ends by itself (`curl -N`
//     without endAtHead, `ringcast tail` without --count or --end-at-head) must
//     print a line, and is stopped there. A `ringcast serve` line replaces the
//     test's server for the rest of its section.
//   - go blocks: the body of `func run(ctx context.Context, handle
//     func(ringcast.Item)) error` (imports: context, errors, fmt, os, time and
//     the client); the test cancels ctx after the second fact, and runs the
//     program twice: the second run must continue after the first.
//   - ts and js blocks: run with Node (through tsx, "@ringcast/client" being
//     clients/ts/src), stopped after their first line of output.
//   - python blocks: run with that python3, `import ringcast` being
//     clients/python/src (PYTHONPATH), stopped after their first line of
//     output (PYTHONUNBUFFERED is set, for sh blocks too).
//
// What the test rewrites (the rest runs as written): 127.0.0.1:8080,
// 0.0.0.0:8080 and localhost:8080 become the test server's address; client
// commands get --server for it (a --server on the line still wins); `{…}`
// becomes a fact; `--duration Ns` becomes 1s; `producer` is a shell function
// printing three facts, one per line.
//
// The quick-start server is `ringcast serve --demo --demo-interval 100ms` on
// a free loopback port.
package readme

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// block is one fenced code block of a marked section.
type block struct {
	section string
	lang    string
	line    int // of the opening fence, 1-based
	text    []string
}

var (
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*)$`)
	fenceRE   = regexp.MustCompile("^```\\s*([A-Za-z0-9_+-]*)\\s*$")
)

const (
	runMarker  = "<!-- readme-test: run -->"
	skipMarker = "<!-- readme-test: skip"
)

// extract returns the blocks of the sections marked to run, in order.
func extract(md string) ([]block, error) {
	var (
		out       []block
		section   string
		level     int  // heading level of the current section
		markLevel = -1 // level of the marked section we are in; -1: none
		skipNext  bool
		cur       *block
	)
	for i, line := range strings.Split(md, "\n") {
		if cur != nil {
			if strings.TrimSpace(line) == "```" {
				out = append(out, *cur)
				cur = nil
				continue
			}
			cur.text = append(cur.text, line)
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			level, section = len(m[1]), m[2]
			if markLevel >= 0 && level <= markLevel {
				markLevel = -1
			}
			skipNext = false
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == runMarker:
			if section == "" {
				return nil, fmt.Errorf("README.md:%d: %s before any heading", i+1, runMarker)
			}
			markLevel = level
			continue
		case strings.HasPrefix(t, skipMarker):
			skipNext = true
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			if markLevel >= 0 && !skipNext {
				cur = &block{section: section, lang: m[1], line: i + 1}
			} else {
				cur = &block{lang: "-"} // read to its end, not kept
			}
			skipNext = false
			continue
		}
		if t != "" {
			skipNext = false // a skip marker applies to the block right after it
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("README.md:%d: code block never closed", cur.line)
	}
	kept := out[:0]
	for _, b := range out {
		if b.lang != "-" {
			kept = append(kept, b)
		}
	}
	return kept, nil
}

// splitCommands cuts an sh block into commands: a line with the lines it
// continues (trailing `\`, `|`, `&&`, `||`; a loop up to its `done`).
func splitCommands(lines []string) []string {
	var cmds []string
	var cur []string
	depth := 0
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if len(cur) == 0 && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		cur = append(cur, l)
		switch w := firstWord(t); w {
		case "for", "while", "until", "if", "case":
			depth++
		}
		if t == "done" || strings.HasPrefix(t, "done ") || strings.HasPrefix(t, "done;") || t == "fi" || t == "esac" {
			depth--
		}
		code := stripComment(t)
		if depth > 0 || strings.HasSuffix(code, `\`) || strings.HasSuffix(code, "|") || strings.HasSuffix(code, "&&") || strings.HasSuffix(code, "||") {
			continue
		}
		cmds = append(cmds, strings.Join(cur, "\n"))
		cur = nil
	}
	if len(cur) > 0 {
		cmds = append(cmds, strings.Join(cur, "\n"))
	}
	return cmds
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// stripComment drops a trailing `  # comment` outside quotes.
func stripComment(s string) string {
	var q rune
	for i, r := range s {
		switch {
		case q != 0:
			if r == q {
				q = 0
			}
		case r == '\'' || r == '"':
			q = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return s
}

var (
	addrRE       = regexp.MustCompile(`\b(127\.0\.0\.1|0\.0\.0\.0|localhost):8080\b`)
	durationRE   = regexp.MustCompile(`--duration[ =]\d+[a-z]+`)
	assignRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*$`)
	serveRE      = regexp.MustCompile(`^(bin/)?ringcast\s+serve\b`)
	curlStreamRE = regexp.MustCompile(`\bcurl\b[^|]*\s-[A-Za-z]*N`)
	tailRE       = regexp.MustCompile(`(^|[\s/])ringcast\s+tail\b`)
	boundedTail  = regexp.MustCompile(`--(count|end-at-head)\b`)
)

const placeholderFact = `'{"topic":"readme/test","type":"readme.note","data":{"text":"from the README test"}}'`

// rewrite turns a README line into the one the test runs against addr.
func rewrite(s, addr string) string {
	s = addrRE.ReplaceAllString(s, addr)
	s = strings.ReplaceAll(s, "'{…}'", placeholderFact)
	return durationRE.ReplaceAllString(s, "--duration 1s")
}

// isStream reports whether cmd runs until stopped.
func isStream(cmd string) bool {
	if curlStreamRE.MatchString(cmd) && !strings.Contains(cmd, "endAtHead") {
		return true
	}
	return tailRE.MatchString(cmd) && !boundedTail.MatchString(cmd)
}

// env is what the commands run in.
type env struct {
	t      *testing.T
	root   string // the repository
	work   string // scratch dir: bin/ringcast, node_modules
	binary string // the fresh build
	srv    *server
	quick  bool // srv is the quick-start server
}

func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Fatalf("no README.md at %s", dir)
	}
	return dir
}

func TestREADMEQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a Go program, runs Node")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the README's quick-start uses curl, which this machine lacks")
	}
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := extract(string(md))
	if err != nil {
		t.Fatal(err)
	}
	langs := map[string]int{}
	for _, b := range blocks {
		langs[b.lang]++
	}
	// Guard against the markers going missing: the quick-start has shell,
	// Go, TypeScript and Python blocks.
	for _, l := range []string{"sh", "go", "ts", "python"} {
		if langs[l] == 0 {
			t.Fatalf("README.md has no %s block in a section marked %s", l, runMarker)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "tsx")); err != nil {
		t.Fatalf("node_modules has no tsx: run `go tool task deps:npm` (npm ci) first")
	}

	e := &env{t: t, root: root, work: t.TempDir()}
	e.binary = filepath.Join(t.TempDir(), "ringcast")
	build := exec.Command(goTool(), "build", "-o", e.binary, "github.com/ringcast/ringcast/server/cmd/ringcast")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ringcast: %v\n%s", err, out)
	}
	e.setupWork()

	section := ""
	for _, b := range blocks {
		if b.section != section {
			section = b.section
			if !e.quick {
				e.startQuick()
			}
		}
		name := fmt.Sprintf("README.md:%d %s", b.line, b.lang)
		switch b.lang {
		case "sh", "bash", "shell", "console":
			e.runShell(name, b)
		case "go":
			e.runGo(name, b)
		case "ts", "js", "javascript", "typescript":
			e.runNode(name, b)
		case "python", "py":
			e.runPython(name, b)
		default:
			t.Errorf("%s: no way to run a %q block (mark it %s (reason) -->)", name, b.lang, skipMarker)
		}
	}
	if e.srv != nil {
		e.srv.stop()
	}
}

func goTool() string {
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(g); err == nil {
		return g
	}
	return "go"
}

// setupWork makes the scratch directory: bin/ringcast (also on PATH as
// ringcast) is a wrapper that gives a client command --server for the
// current test server, and node_modules is the repository's.
func (e *env) setupWork() {
	bin := filepath.Join(e.work, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		e.t.Fatal(err)
	}
	wrapper := `#!/usr/bin/env bash
# The README test's ringcast: the fresh build, with --server for the test's
# server on every command that takes one (a later --server on the line wins).
real=` + strconv.Quote(e.binary) + `
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ] && "$real" "$1" --help 2>&1 | grep -Eq -- '^[[:space:]]+--?server([[:space:]=,]|$)'; then
  cmd=$1; shift
  exec "$real" "$cmd" --server "$RINGCAST_README_SERVER" "$@"
fi
exec "$real" "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "ringcast"), []byte(wrapper), 0o755); err != nil {
		e.t.Fatal(err)
	}
	for _, d := range []string{"node_modules", "clients"} {
		if err := os.Symlink(filepath.Join(e.root, d), filepath.Join(e.work, d)); err != nil {
			e.t.Fatal(err)
		}
	}
	// python3 is Debian's, with the packages the Python client needs
	// (go tool task deps:python), whatever else is first on PATH.
	if _, err := os.Stat(debianPython); err == nil {
		if err := os.Symlink(debianPython, filepath.Join(bin, "python3")); err != nil {
			e.t.Fatal(err)
		}
	}
}

// debianPython is the python3 the Python client is tested with.
const debianPython = "/usr/bin/python3"

// python is the python3 the README's Python runs with.
func (e *env) python() string {
	return filepath.Join(e.work, "bin", "python3")
}

// startQuick (re)starts the quick-start server: the demo feed, fast.
func (e *env) startQuick() {
	if e.srv != nil {
		e.srv.stop()
	}
	e.srv = startServer(e.t, e.binary, e.work, []string{"serve", "--addr", "127.0.0.1:0", "--demo", "--demo-interval", "100ms"})
	e.quick = true
}

const prelude = `set -eo pipefail
producer() { for i in 1 2 3; do printf '{"topic":"readme/lines","type":"readme.line","data":{"n":%d}}\n' "$i"; done; }
`

func (e *env) shellCmd(ctx context.Context, script string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", prelude+script)
	cmd.Dir = e.work
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Join(e.work, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"RINGCAST_README_SERVER=http://"+e.srv.addr,
		"PYTHONUNBUFFERED=1",
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second // a process that left the group and holds a pipe
	return cmd
}

func (e *env) runShell(name string, b block) {
	var assigns []string
	for i, c := range splitCommands(b.text) {
		c = rewrite(c, e.srv.addr)
		label := fmt.Sprintf("%s #%d", name, i+1)
		switch {
		case assignRE.MatchString(strings.TrimSpace(c)):
			assigns = append(assigns, c)
		case serveRE.MatchString(strings.TrimSpace(c)):
			e.srv.stop()
			args := strings.Fields(addrRE.ReplaceAllString(c, "127.0.0.1:0")) // a serve line is plain words
			if strings.Contains(c, "$") || strings.Contains(c, "'") || strings.Contains(c, `"`) {
				e.t.Fatalf("%s: a serve line is run as plain words; this one quotes or expands: %s", label, c)
			}
			if !strings.Contains(c, "127.0.0.1:0") && !strings.Contains(c, "--addr") {
				args = append(args, "--addr", "127.0.0.1:0")
			}
			e.srv = startServer(e.t, e.binary, e.work, args[1:])
			e.quick = false
		default:
			e.runOne(label, strings.Join(append(assigns, c), "\n"))
		}
	}
}

// runOne runs one command: to its end (exit 0), or, a stream, to its
// first line of output.
func (e *env) runOne(label, script string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	cmd := e.shellCmd(ctx, script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if !isStream(script) {
		out, err := cmd.Output()
		if err != nil {
			e.t.Errorf("%s failed: %v\n$ %s\nstdout:\n%s\nstderr:\n%s", label, err, script, out, stderr.String())
			return
		}
		e.t.Logf("%s ok:\n$ %s\n%s", label, script, firstLines(string(out), 5))
		return
	}
	line, err := firstLine(cmd, cancel)
	if err != nil {
		e.t.Errorf("%s (a stream, stopped at its first line): %v\n$ %s\nstderr:\n%s", label, err, script, stderr.String())
		return
	}
	e.t.Logf("%s ok (stream, stopped at its first line):\n$ %s\n%s", label, script, line)
}

// firstLine starts cmd, waits for the first non-empty line on its
// standard output, then stops it (its process group).
func firstLine(cmd *exec.Cmd, cancel context.CancelFunc) (string, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	line := ""
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			line = sc.Text()
			break
		}
	}
	cancel()                           // kills the process group
	_, _ = io.Copy(io.Discard, stdout) // to its end: every writer is gone
	werr := cmd.Wait()
	if line == "" {
		return "", fmt.Errorf("ended without a line of output (%v)", werr)
	}
	return line, nil
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = append(l[:n], "…")
	}
	return strings.Join(l, "\n")
}

const goProgram = `package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

var (
	_ = errors.New
	_ = time.Second
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	facts := 0
	handle := func(it ringcast.Item) {
		if it.Kind == ringcast.KindFact {
			fmt.Println("fact", it.Cursor)
			if facts++; facts == 2 {
				cancel()
			}
		}
	}
	if err := run(ctx, handle); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, handle func(ringcast.Item)) error {
%s
	return nil
}
`

// runGo builds the block into a program of a module outside the repository
// (replace directives to the client and the generated code, as a consumer
// would) and runs it twice: the second run continues after the first.
func (e *env) runGo(name string, b block) {
	e.t.Helper()
	dir := filepath.Join(e.work, "gosnippet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	client := filepath.Join(e.root, "clients", "go")
	gen := filepath.Join(e.root, "gen", "go")
	write := func(n, text string) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(text), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/readme\n\ngo 1.24\n\n"+
		"require github.com/ringcast/ringcast/clients/go v0.0.0\n\n"+
		"replace github.com/ringcast/ringcast/clients/go => "+client+"\n"+
		"replace github.com/ringcast/ringcast/gen/go => "+gen+"\n")
	write("main.go", fmt.Sprintf(goProgram, rewrite(strings.Join(b.text, "\n"), e.srv.addr)))
	gocmd := func(args ...string) {
		cmd := exec.Command(goTool(), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			e.t.Fatalf("%s: go %s: %v\n%s\nthe program:\n%s", name, strings.Join(args, " "), err, out, fmt.Sprintf(goProgram, strings.Join(b.text, "\n")))
		}
	}
	gocmd("mod", "tidy")
	prog := filepath.Join(dir, "readme-go")
	gocmd("build", "-o", prog, ".")

	runOnce := func() []string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
		defer cancel()
		cmd := exec.CommandContext(ctx, prog)
		cmd.Dir = e.work
		out, err := cmd.CombinedOutput()
		if err != nil {
			e.t.Fatalf("%s: the Go snippet failed: %v\n%s", name, err, out)
		}
		var cursors []string
		for _, l := range strings.Split(string(out), "\n") {
			if c, ok := strings.CutPrefix(l, "fact "); ok {
				cursors = append(cursors, c)
			}
		}
		if len(cursors) != 2 {
			e.t.Fatalf("%s: the Go snippet printed %d facts, want 2:\n%s", name, len(cursors), out)
		}
		return cursors
	}
	first := runOnce()
	saved, err := os.ReadFile(filepath.Join(e.work, "app.cursor"))
	if err != nil {
		e.t.Fatalf("%s: the Go snippet saved no cursor: %v", name, err)
	}
	if got := strings.TrimSpace(string(saved)); got != first[1] {
		e.t.Errorf("%s: app.cursor holds %q, want the last fact's cursor %q", name, got, first[1])
	}
	second := runOnce()
	if !after(second[0], first[1]) {
		e.t.Errorf("%s: the second run began at %s, not after the first run's last fact %s", name, second[0], first[1])
	}
	e.t.Logf("%s ok: first run %v, second run %v", name, first, second)
}

// after reports whether cursor a (rc2.<epoch>.<seq>.<fact>.<fingerprint>,
// or rc1.<epoch>.<seq>.<fact>) is past b in the same epoch.
func after(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	if len(pa) < 4 || len(pb) < 4 || pa[1] != pb[1] {
		return false
	}
	num := func(s string) uint64 { n, _ := strconv.ParseUint(s, 10, 64); return n }
	// fact 0: the commit fully consumed, after any fact K > 0 of it.
	fact := func(s string) uint64 {
		if n := num(s); n > 0 {
			return n
		}
		return 1 << 63
	}
	if num(pa[2]) != num(pb[2]) {
		return num(pa[2]) > num(pb[2])
	}
	return fact(pa[3]) > fact(pb[3])
}

// runNode runs the block with Node through tsx, "@ringcast/client" being
// the client's sources, and stops it at its first line of output.
func (e *env) runNode(name string, b block) {
	e.t.Helper()
	dir := filepath.Join(e.work, "nodesnippet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "node_modules")); errors.Is(err, os.ErrNotExist) {
		if err := os.Symlink(filepath.Join(e.root, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			e.t.Fatal(err)
		}
	}
	src := (&url.URL{Scheme: "file", Path: filepath.Join(e.root, "clients", "ts", "src", "index.ts")}).String()
	text := rewrite(strings.Join(b.text, "\n"), e.srv.addr)
	text = strings.ReplaceAll(text, `from "@ringcast/client"`, `from "`+src+`"`)
	file := filepath.Join(dir, fmt.Sprintf("snippet-%d.mts", b.line))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--import", "tsx", file)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	line, err := firstLine(cmd, cancel)
	if err != nil {
		e.t.Errorf("%s: the Node snippet: %v\nstderr:\n%s\nthe program:\n%s", name, err, stderr.String(), text)
		return
	}
	if m := bigintLiteral.FindString(line); m != "" {
		e.t.Errorf("%s: the Node snippet printed a bigint as %q (console.log of a bigint): print seqs with String(…)\n%s", name, strings.TrimSpace(m), line)
	}
	e.t.Logf("%s ok (stopped at its first line): %s", name, line)
}

// bigintLiteral is how console.log prints a bigint, 12n: a README snippet
// prints seqs as a person reads them (String(item.seq): 12).
var bigintLiteral = regexp.MustCompile(`(^|[\s\[{(,:])[0-9]+n($|[\s\]}),])`)

// runPython runs the block with python3, `import ringcast` being the
// client's sources, and stops it at its first line of output.
func (e *env) runPython(name string, b block) {
	e.t.Helper()
	py := e.python()
	if _, err := os.Stat(py); err != nil {
		e.t.Fatalf("%s: no %s: install Debian's python3 with the client's packages (go tool task deps:python)", name, debianPython)
	}
	dir := filepath.Join(e.work, "pysnippet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	text := rewrite(strings.Join(b.text, "\n"), e.srv.addr)
	file := filepath.Join(dir, fmt.Sprintf("snippet_%d.py", b.line))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, py, file)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(e.root, "clients", "python", "src"), "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	line, err := firstLine(cmd, cancel)
	if err != nil {
		e.t.Errorf("%s: the Python snippet: %v\nstderr:\n%s\nthe program:\n%s", name, err, stderr.String(), text)
		return
	}
	e.t.Logf("%s ok (stopped at its first line): %s", name, line)
}

// server is a `ringcast serve` the test started.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}
	logs   *syncBuilder
}

// syncBuilder is a strings.Builder for one writer and other readers.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuilder) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.WriteString(s)
}

func (b *syncBuilder) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startServer runs binary with args in dir and waits for its "ringcast
// serving" log line, which names the address.
func startServer(t *testing.T, binary, dir string, args []string) *server {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, exited: make(chan struct{}), logs: &syncBuilder{}}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.logs.WriteString(line + "\n")
			if i := strings.Index(line, " addr="); i >= 0 && strings.Contains(line, "ringcast serving") {
				a := line[i+len(" addr="):]
				if j := strings.IndexByte(a, ' '); j >= 0 {
					a = a[:j]
				}
				select {
				case addr <- a:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.stop)
	select {
	case s.addr = <-addr:
		return s
	case <-s.exited:
		t.Fatalf("ringcast %s exited before serving:\n%s", strings.Join(args, " "), s.logs.String())
	case <-time.After(30 * time.Second): // hang guard
		t.Fatalf("ringcast %s not serving after 30s:\n%s", strings.Join(args, " "), s.logs.String())
	}
	return nil
}

func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}
