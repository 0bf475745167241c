package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// skRaceReads is how many reads each case makes while the tree changes
// under them. Before reads were confined by os.Root, an os.DirFS repository
// returned a file from outside the skill folder in 1 to 5 of 20,000 reads.
const skRaceReads = 20_000

// A file or folder of a skill (or the skill folder itself) is swapped for a
// symbolic link to outside the skill (another skill, the repository, or
// outside it) while other goroutines read it. Reads may fail while the tree
// changes, but not one may return content from outside the skill folder.
func TestReadResourceNeverEscapesUnderRace(t *testing.T) {
	if testing.Short() {
		t.Skip("long race test")
	}
	const inside, secret = "INSIDE", "SECRET-OUTSIDE-THE-SKILL"
	base := t.TempDir()
	skWriteTree(t, base, map[string]string{
		"secret/data.txt":       secret,
		"secret/sub/data.txt":   secret,
		"repo/secret.txt":       secret,
		"repo/one/SKILL.md":     skSkillText("one", "Raced."),
		"repo/one/data.txt":     inside,
		"repo/one/sub/data.txt": inside,
		"repo/two/SKILL.md":     skSkillText("two", "Other."),
		"repo/two/data.txt":     secret,
		"repo/two/sub/data.txt": secret,
	})
	if err := os.Symlink("x", filepath.Join(base, "probe")); err != nil {
		t.Skip("cannot make symbolic links here:", err)
	}
	one := filepath.Join(base, "repo/one")

	// Each case swaps name (in the skill folder, or the skill folder itself
	// for "") for a link to each target in turn (relative to the folder the
	// link is in), and puts it back, while read is read.
	type swap struct {
		name, read string
		targets    []string
	}
	cases := []swap{
		{"data.txt", "data.txt", []string{filepath.Join(base, "secret/data.txt"), "../two/data.txt", "../secret.txt", "../../secret/data.txt"}},
		{"sub", "sub/data.txt", []string{filepath.Join(base, "secret/sub"), "../two/sub", "../../secret/sub"}},
		{"", "data.txt", []string{"two", filepath.Join(base, "secret")}},
	}
	dirRepo, err := Dir("dir", filepath.Join(base, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range []Repository{dirRepo, {"dirfs", os.DirFS(filepath.Join(base, "repo"))}} {
		l := skNewLibrary(t, repo)
		s, ok := l.Skill("one")
		if !ok {
			t.Fatalf("no skill one: %v", l.Problems())
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", repo.Name, c.read+"@"+c.name), func(t *testing.T) {
				path, parked := filepath.Join(one, c.name), filepath.Join(base, "parked")
				if c.name == "" {
					path = one
				}
				var stop atomic.Bool
				var wg sync.WaitGroup
				wg.Go(func() {
					for i := 0; !stop.Load(); i++ {
						target := c.targets[i%len(c.targets)]
						if err := os.Rename(path, parked); err != nil {
							t.Error(err)
							return
						}
						if err := os.Symlink(target, path); err != nil {
							t.Error(err)
							return
						}
						if err := os.Remove(path); err != nil {
							t.Error(err)
							return
						}
						if err := os.Rename(parked, path); err != nil {
							t.Error(err)
							return
						}
					}
				})
				var escaped, ok atomic.Int64
				var readers sync.WaitGroup
				for range 2 {
					readers.Go(func() {
						for range skRaceReads / 2 {
							r, err := l.ReadResource(s, c.read, 0)
							if err != nil {
								continue
							}
							if string(r.Data) != inside {
								escaped.Add(1)
							} else {
								ok.Add(1)
							}
						}
					})
				}
				readers.Wait()
				stop.Store(true)
				wg.Wait()
				t.Logf("%d reads: %d returned the skill's file, %d escaped", skRaceReads, ok.Load(), escaped.Load())
				if escaped.Load() > 0 {
					t.Fatalf("%d of %d reads returned a file from outside the skill folder", escaped.Load(), skRaceReads)
				}
				if ok.Load() == 0 {
					t.Fatal("no read succeeded: the test raced nothing")
				}
			})
		}
	}
}
