package ringcast_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

func TestRemoveCursorTempsRemovesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.cursor")
	if err := ringcast.SaveCursor(path, ringcast.Cursor{Epoch: 7, Seq: 3}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".app.cursor.tmp123", ".app.cursor.tmp9", ".app.cursor.tmpx", ".other.cursor.tmp1", "app.cursor.tmp1"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := ringcast.RemoveCursorTemps(path); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{".app.cursor.tmpx", ".other.cursor.tmp1", "app.cursor", "app.cursor.tmp1"}
	if !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if c, err := ringcast.LoadCursor(path); err != nil || c.Seq != 3 {
		t.Fatalf("cursor after cleanup: %v %v", c, err)
	}
	if err := ringcast.RemoveCursorTemps(filepath.Join(dir, "missing", "x.cursor")); err != nil {
		t.Fatalf("missing directory: %v", err)
	}
}
