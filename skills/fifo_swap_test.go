//go:build unix && toolstream_testhooks

package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestFIFOSwappedInDoesNotHang: a file of a skill on disk swapped for a
// named pipe between the check of its path and its open is refused, not
// opened: opening a pipe for reading waits for a writer, and a load (or a
// whole rescan, holding the library's reload lock) waited forever.
func TestFIFOSwappedInDoesNotHang(t *testing.T) {
	for _, kind := range []string{"Dir", "os.DirFS"} {
		t.Run(kind, func(t *testing.T) { testFIFOSwappedIn(t, kind) })
	}
}

func testFIFOSwappedIn(t *testing.T, kind string) {
	dir := t.TempDir()
	skWriteTree(t, dir, map[string]string{
		"s/SKILL.md": skSkillText("s", "Fifo."),
		"s/notes.md": "notes",
		"t/SKILL.md": skSkillText("t", "Two."),
		"t/ref/x.md": "x",
		"u/SKILL.md": skSkillText("u", "Three."),
		"u/sub/y.md": "y",
		"v/SKILL.md": skSkillText("v", "Four."),
	})
	repo := Repository{Name: "d", FS: os.DirFS(dir)}
	if kind == "Dir" {
		var err error
		if repo, err = Dir("d", dir); err != nil {
			t.Fatal(err)
		}
	}
	l := skNewLibrary(t, repo)
	s, _ := l.Skill("s")

	// swap replaces name (a slash path under dir) with a named pipe, once,
	// and returns a function that opens the pipe for writing when a read
	// still waits for it (so that a test that fails does not leave a
	// goroutine behind).
	swap := func(name string) func() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("no named pipes:", err)
		}
		return func() {
			if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
	}
	var (
		mu       sync.Mutex
		unblockF func()
	)
	setUnblock := func(f func()) { mu.Lock(); unblockF = f; mu.Unlock() }
	unblock := func() {
		mu.Lock()
		defer mu.Unlock()
		if unblockF != nil {
			unblockF()
		}
	}
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(3 * time.Second):
			t.Errorf("%s: still blocked after 3 s", what)
			unblock()
			return <-done
		}
	}

	onResolved = func(rel string) {
		if rel == "notes.md" {
			setUnblock(swap("s/notes.md"))
		}
	}
	t.Cleanup(func() { onResolved = nil })
	err := within("a resource swapped for a pipe", func() error {
		_, err := l.ReadResource(s, "notes.md", 0)
		return err
	})
	if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a resource swapped for a pipe: %v", err)
	}

	onResolved = func(rel string) {
		if rel == "t/SKILL.md" {
			setUnblock(swap("t/SKILL.md"))
		}
	}
	err = within("a rescan whose SKILL.md was swapped for a pipe", l.Reload)
	if err != nil {
		t.Errorf("reload: %v", err)
	}
	if _, ok := l.Skill("t"); ok {
		t.Errorf("a skill whose SKILL.md is a pipe is still listed")
	}

	// The same with a writer holding the pipe open (and writing nothing):
	// the open does not wait then, a read would.
	onResolved = func(rel string) {
		if rel == "v/SKILL.md" {
			swap("v/SKILL.md")
			w, err := os.OpenFile(filepath.Join(dir, "v", "SKILL.md"), os.O_RDWR, 0)
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { w.Close() })
			setUnblock(func() { w.Close() })
		}
	}
	if err := within("a rescan whose SKILL.md was swapped for a pipe a writer holds", l.Reload); err != nil {
		t.Errorf("reload: %v", err)
	}
	if _, ok := l.Skill("v"); ok {
		t.Errorf("a skill whose SKILL.md is a pipe is still listed")
	}

	// A folder swapped for a pipe between the listing of its parent and
	// its own.
	onResolved = nil
	onScan = func(d string) {
		if d == "u" {
			setUnblock(swap("u"))
		}
	}
	t.Cleanup(func() { onScan = nil })
	if err := within("a rescan whose folder was swapped for a pipe", l.Reload); err != nil {
		t.Errorf("reload: %v", err)
	}
	if _, ok := l.Skill("u"); ok {
		t.Errorf("a skill whose folder is a pipe is still listed")
	}
}
