package skills_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// A user's own skills, for that user's sessions only: another session
// neither sees nor loads them.
func ExampleLoader_SetSessionLibrary() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "alice-skills-")
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, "notes"), 0o755)
	os.WriteFile(filepath.Join(dir, "notes", "SKILL.md"), []byte("---\nname: notes\ndescription: Take notes Alice's way.\n---\nOne line per idea.\n"), 0o644)
	tk := toolkit.New()
	defer tk.Close(ctx)

	ld, _ := skills.Install(tk, nil)    // no shared library: no skills by default
	disk, _ := skills.Dir("alice", dir) // a folder per user
	alice, _ := skills.NewLibrary(disk)
	ld.SetSessionLibrary("conv-1", alice, skills.BesideShared) // or skills.InsteadOfShared

	load := []toolkit.Call{{ID: "c1", Name: "load_skill_through_path", Args: []byte(`{"skillId":"notes","path":"SKILL.md"}`)}}
	for _, id := range []string{"conv-1", "conv-2"} {
		sess, _ := tk.Session(id)
		r := sess.Run(ctx, load)[0]
		first, _, _ := strings.Cut(r.Text(), "\n")
		fmt.Printf("%s: %s\n", id, first)
	}
	// Output:
	// conv-1: Skill "notes" loaded.
	// conv-2: Error: there are no skills to load in this session
}
