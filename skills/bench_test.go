package skills

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
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
