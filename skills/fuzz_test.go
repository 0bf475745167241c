package skills

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"---\nname: n\ndescription: d\n---\nbody\n",
		"\xef\xbb\xbf---\r\nname: a.b_c-d\r\ndescription: x\r\ntool-groups: [g]\r\n---\r\n",
		"---\nname: n\ndescription: d\nmeta: {a: [1, {b: c}], 2: x}\nwhen: 2024-01-01\n---\n",
		"---\nname: &a n\ndescription: *a\nx: &l [*a, *a]\ny: [*l, *l]\n---\n",
		"---\n<<: {name: n, description: d}\n---\n",
		"---\nname: n\ndescription: |\n  multi\n---\n---\n",
		"---\nname: 1\ndescription: d\n",
		"---\nname: n\n  bad: indent\n---\n",
		"---\n- a\n---\n",
		"---   \n---\n",
		"---\n~: 1\nname: n\ndescription: d\n---",
		"---\nname: !!binary aGVsbG8=\ndescription: d\n---",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if s != nil {
				t.Fatal("skill and error")
			}
			return
		}
		if !namePattern.MatchString(s.Name) {
			t.Errorf("invalid name %q accepted", s.Name)
		}
		if strings.TrimSpace(s.Description) == "" || s.Description != strings.TrimSpace(s.Description) {
			t.Errorf("description %q", s.Description)
		}
		if s.Metadata == nil {
			t.Error("nil Metadata")
		}
		for _, k := range []string{keyName, keyDescription, keyGroups} {
			if _, ok := s.Metadata[k]; ok {
				t.Errorf("%s in Metadata", k)
			}
		}
		for _, g := range s.Groups {
			if strings.TrimSpace(g) == "" {
				t.Error("empty group")
			}
		}
		if strings.Contains(s.Body, "\r\n") || !utf8.ValidString(s.Body) || s.Body != strings.TrimRight(s.Body, " \t\r\n") {
			t.Errorf("body %q", s.Body)
		}
		skCheckMaps(t, s.Metadata, 0)
	})
}

// skCheckMaps fails on a map type other than map[string]any.
func skCheckMaps(t *testing.T, v any, depth int) {
	if depth > 10000 {
		t.Fatal("metadata too deep")
	}
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			skCheckMaps(t, e, depth+1)
		}
	case []any:
		for _, e := range v {
			skCheckMaps(t, e, depth+1)
		}
	case map[any]any:
		t.Fatalf("map[any]any in Metadata: %v", v)
	}
}

// skFuzzTree returns libraries over a MapFS and an on-disk tree, each with
// skill "s" (or "one" on disk), and the contents of the files inside it.
func skFuzzTree(f *testing.F) (libs []*Library, skills []*Skill, inside [][]byte) {
	mapFS := fstest.MapFS{
		"top.txt":          {Data: []byte(skSecret)},
		"s/SKILL.md":       skSkillFile("s", "Fuzz target."),
		"s/a.txt":          {Data: []byte("inside a")},
		"s/d/b.md":         {Data: []byte("inside b")},
		"s/d/e/c.bin":      {Data: []byte("\x00inside c")},
		"s/big.txt":        {Data: bytes.Repeat([]byte("ü"), 3000)},
		"s/l-in":           {Mode: fs.ModeSymlink, Data: []byte("d/b.md")},
		"s/l-dir":          {Mode: fs.ModeSymlink, Data: []byte("d")},
		"s/l-self":         {Mode: fs.ModeSymlink, Data: []byte(".")},
		"s/d/l-up":         {Mode: fs.ModeSymlink, Data: []byte("..")},
		"s/d/l-upup":       {Mode: fs.ModeSymlink, Data: []byte("../..")},
		"s/l-out":          {Mode: fs.ModeSymlink, Data: []byte("../top.txt")},
		"s/l-other":        {Mode: fs.ModeSymlink, Data: []byte("../t/secret")},
		"s/l-abs":          {Mode: fs.ModeSymlink, Data: []byte("/top.txt")},
		"s/l-loop":         {Mode: fs.ModeSymlink, Data: []byte("l-loop")},
		"s/d/l-chain":      {Mode: fs.ModeSymlink, Data: []byte("../l-dir/l-up/l-out")},
		"s/l-updir":        {Mode: fs.ModeSymlink, Data: []byte("d/l-upup")},
		"s/l-back":         {Mode: fs.ModeSymlink, Data: []byte("../s/a.txt")},
		"t/SKILL.md":       skSkillFile("t", "Another skill."),
		"t/secret":         {Data: []byte(skSecret)},
		"t/l-into-s":       {Mode: fs.ModeSymlink, Data: []byte("../s/a.txt")},
		"s/l-win":          {Mode: fs.ModeSymlink, Data: []byte(`..\top.txt`)},
		"s/l-trailing":     {Mode: fs.ModeSymlink, Data: []byte("a.txt/")},
		"s/l-dotdot-first": {Mode: fs.ModeSymlink, Data: []byte("d/../../top.txt")},
	}
	for name, file := range mapFS {
		if strings.HasPrefix(name, "s/") && file.Mode&fs.ModeSymlink == 0 {
			inside = append(inside, file.Data)
		}
	}
	base := skSymlinkTree(f)
	for _, name := range []string{"SKILL.md", "doc.md", "sub/inner.txt"} {
		data, err := os.ReadFile(filepath.Join(base, "repo/one", name))
		if err != nil {
			f.Fatal(err)
		}
		inside = append(inside, data)
	}
	rooted, err := Dir("rooted", filepath.Join(base, "repo"))
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range []struct {
		repo  Repository
		skill string
	}{
		{Repository{"map", mapFS}, "s"},
		{rooted, "one"},
		{Repository{"plain", os.DirFS(filepath.Join(base, "repo"))}, "one"},
	} {
		l, err := NewLibrary(r.repo)
		if err != nil {
			f.Fatal(err)
		}
		s, ok := l.Skill(r.skill)
		if !ok {
			f.Fatalf("no skill %s in %s: %v", r.skill, r.repo.Name, l.Problems())
		}
		libs, skills = append(libs, l), append(skills, s)
	}
	return libs, skills, inside
}

func FuzzResolvePath(f *testing.F) {
	libs, skills, inside := skFuzzTree(f)
	for _, seed := range []string{
		"SKILL.md", "a.txt", "d/b.md", "d/e/c.bin", "big.txt", "l-in", "l-dir/b.md", "l-self/l-self/a.txt",
		"d/l-up/a.txt", "d/l-upup/top.txt", "l-out", "l-other", "l-abs", "l-loop", "d/l-chain", "l-updir/s/a.txt",
		"l-back", "l-win", "l-trailing", "l-dotdot-first", "../top.txt", "/top.txt", "C:/x", `d\b.md`, "./a.txt",
		"d/", "d//b.md", "a.txt\x00", "abs", "rel", "other-skill", "outdir/secret.txt", "outdir2/two/private.txt",
		"chain1", "chain-out", "loop-a", "subdir/self/self/up", "sub/up-out", "long0", "long1", "dirlink-file",
		"sub/self/../doc.md", "doc.md", "back-in",
	} {
		f.Add(seed, uint16(0))
		f.Add(seed, uint16(3))
	}
	f.Fuzz(func(t *testing.T, p string, limit uint16) {
		for i, l := range libs {
			r, err := l.ReadResource(skills[i], p, int64(limit))
			if err != nil {
				if !errors.Is(err, ErrBadPath) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrTooLarge) {
					t.Errorf("%s: %q: unexpected error kind: %v", skills[i].Repository, p, err)
				}
				if r.Data != nil {
					t.Errorf("data with an error")
				}
				continue
			}
			if bytes.Contains(r.Data, []byte(skSecret)) {
				t.Fatalf("%s: %q returned data from outside the skill", skills[i].Repository, p)
			}
			ok := false
			for _, c := range inside {
				if bytes.HasPrefix(c, r.Data) {
					ok = true
					break
				}
			}
			if !ok {
				t.Fatalf("%s: %q returned %q, which is no file of the skill", skills[i].Repository, p, r.Data)
			}
			if !fs.ValidPath(r.Path) || r.Path == "." || strings.Contains(r.Path, `\`) {
				t.Errorf("%s: %q accepted as %q", skills[i].Repository, p, r.Path)
			}
			eff := int64(limit)
			if eff == 0 {
				eff = defaultResourceLimit
			}
			if int64(len(r.Data)) > eff || r.Truncated && r.Binary || r.Truncated != (r.Size > int64(len(r.Data))) {
				t.Errorf("%s: %q: %d bytes of %d, limit %d, truncated %v", skills[i].Repository, p, len(r.Data), r.Size, limit, r.Truncated)
			}
		}
	})
}
