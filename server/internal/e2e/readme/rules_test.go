package readme

import (
	"reflect"
	"testing"
)

// The rule that picks the blocks: marked sections with their sub-sections,
// up to a heading of the same or a higher level; a skip marker drops the
// block right after it only.
func TestExtractFollowsTheMarkers(t *testing.T) {
	md := "# top\n```sh\nnot marked\n```\n" +
		"## A\n\n<!-- readme-test: run -->\n\n```sh\na1\n```\n" +
		"### A.1\n```go\na2\n```\n" +
		"<!-- readme-test: skip (browser only) -->\n```ts\nskipped\n```\n```ts\na3\n```\n" +
		"## B\n```sh\nnot marked\n```\n" +
		"## C\n<!-- readme-test: run -->\n```sh\nc1\n```\n"
	blocks, err := extract(md)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range blocks {
		got = append(got, b.section+"/"+b.lang+"/"+b.text[0])
	}
	want := []string{"A/sh/a1", "A.1/go/a2", "A.1/ts/a3", "C/sh/c1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("extract: %q, want %q", got, want)
	}
	if _, err := extract("## A\n<!-- readme-test: run -->\n```sh\nopen\n"); err == nil {
		t.Error("an unclosed block is not an error")
	}
}

func TestSplitCommands(t *testing.T) {
	got := splitCommands([]string{
		"# a comment",
		"curl -H x \\",
		"  http://h/p",
		"",
		"req='{}'",
		`printf "%s" "$req" |`,
		"  curl -d @- http://h/q | grep -o x",
		"for p in a b; do",
		"  echo $p",
		"done",
		"ringcast publish --lines   # one | per line",
	})
	want := []string{
		"curl -H x \\\n  http://h/p",
		"req='{}'",
		"printf \"%s\" \"$req\" |\n  curl -d @- http://h/q | grep -o x",
		"for p in a b; do\n  echo $p\ndone",
		"ringcast publish --lines   # one | per line",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitCommands:\n%q\nwant\n%q", got, want)
	}
}

func TestRewriteAndStreams(t *testing.T) {
	if got := rewrite("curl http://127.0.0.1:8080/x --duration 10s '{…}'", "127.0.0.1:5"); got != "curl http://127.0.0.1:5/x --duration 1s "+placeholderFact {
		t.Errorf("rewrite: %s", got)
	}
	for cmd, stream := range map[string]bool{
		"curl -N 'http://h/events?topic=a'":                     true,
		"curl -sN -d '{\"endAtHead\":true}' http://h/Subscribe": false,
		"curl -s http://h/x":                                    false,
		"bin/ringcast tail --topic a":                           true,
		"ringcast tail --token \"$(ringcast token --sub me)\"":  true,
		"bin/ringcast tail --cursor-file c --count 5":           false,
		"ringcast tail --end-at-head":                           false,
		"bin/ringcast status":                                   false,
	} {
		if isStream(cmd) != stream {
			t.Errorf("isStream(%s) = %v", cmd, !stream)
		}
	}
}

// TestBigintLiteral: what console.log prints for a bigint (12n) is caught,
// not a decimal or a word ending in n.
func TestBigintLiteral(t *testing.T) {
	for line, want := range map[string]bool{
		"12n 0 true gauge.note { text: 'hi' }": true,
		"[ 3n, 4n ]":                           true,
		"seq: 7n,":                             true,
		"12 0 true gauge.note { text: 'hi' }":  false,
		"{ text: 'lane 4n' }":                  false,
		"{ text: 'run' } 2026n-":               false,
		"g-014n":                               false,
	} {
		if got := bigintLiteral.MatchString(line); got != want {
			t.Errorf("%q: matched %v, want %v", line, got, want)
		}
	}
}
