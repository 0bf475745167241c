package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
	"time"
)

// BenchmarkReadResource reads a small file two folders deep in a skill: on
// disk through Dir and os.DirFS (each read opens the skill folder as an
// os.Root), and from memory.
func BenchmarkReadResource(b *testing.B) {
	dir := b.TempDir()
	files := map[string]string{"team/s/SKILL.md": skSkillText("s", "Bench."), "team/s/docs/ref/a.md": "# A\nsome text\n"}
	mem := fstest.MapFS{}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
		mem[name] = &fstest.MapFile{Data: []byte(data)}
	}
	disk, err := Dir("dir", dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, repo := range []Repository{disk, {"dirfs", os.DirFS(dir)}, {"mapfs", mem}} {
		b.Run(repo.Name, func(b *testing.B) {
			l, err := NewLibrary(repo)
			if err != nil {
				b.Fatal(err)
			}
			s, _ := l.Skill("s")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.ReadResource(s, "docs/ref/a.md", 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListing: what Skills costs when nothing changed on disk, with
// the check that finds skills added or removed (a stat of the
// repository's folder, the only one that holds no skill), beside reading the
// last scan's list as it was before the check ("cached"), for 10 and
// 100 skills in a folder on disk.
func BenchmarkListing(b *testing.B) {
	for _, n := range []int{10, 100} {
		dir := b.TempDir()
		for i := range n {
			name := fmt.Sprintf("s%03d", i)
			p := filepath.Join(dir, name, "SKILL.md")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(skSkillText(name, "Bench.")), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		// A library that was not just written: its folder's time is old.
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(dir, old, old); err != nil {
			b.Fatal(err)
		}
		repo, err := Dir("dir", dir)
		if err != nil {
			b.Fatal(err)
		}
		l, err := NewLibrary(repo)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("cached/%d", n), func(b *testing.B) {
			for b.Loop() {
				if len(slices.Clone(l.state.Load().sorted)) != n {
					b.Fatal("skills lost")
				}
			}
		})
		b.Run(fmt.Sprintf("checked/%d", n), func(b *testing.B) {
			for b.Loop() {
				if len(l.Skills()) != n {
					b.Fatal("skills lost")
				}
			}
		})
	}
}
