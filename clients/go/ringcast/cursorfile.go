package ringcast

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SaveCursor writes c to path atomically: the text form goes to a temporary
// file in the same directory, which is synced, renamed over path, and the
// directory synced, so a crash leaves either the old cursor or the new one,
// never a torn file.
func SaveCursor(path string, c Cursor) (err error) {
	text, err := c.MarshalText()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(append(text, '\n')); err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil {
			return fmt.Errorf("save cursor: sync %s: %w", dir, serr)
		}
	} else {
		return fmt.Errorf("save cursor: %w", derr)
	}
	return nil
}

// LoadCursor reads a cursor written by SaveCursor. A missing file is the
// zero cursor (start from a snapshot); anything else that does not parse is
// an error, never silently a fresh start.
func LoadCursor(path string) (Cursor, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Cursor{}, nil
	}
	if err != nil {
		return Cursor{}, fmt.Errorf("load cursor: %w", err)
	}
	c, err := ParseCursor(strings.TrimSpace(string(b)))
	if err != nil {
		return Cursor{}, fmt.Errorf("load cursor from %s: %w", path, err)
	}
	return c, nil
}

// tempPrefix is how the names of SaveCursor's temporary files for path
// begin; os.CreateTemp appends random digits.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp" }

// RemoveCursorTemps removes the temporary files that SaveCursor calls for
// path left behind when their process was killed in the middle of a save
// (after creating the temporary file, before renaming it over path). Call
// it at start, before saving, from the cursor file's only writer: a save in
// flight in another process would lose its temporary file and fail.
func RemoveCursorTemps(path string) error {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove stale cursor temporaries: %w", err)
	}
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove stale cursor temporaries: %w", errors.Join(errs...))
	}
	return nil
}
