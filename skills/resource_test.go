package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"
)

var skPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")

func skResourceLibrary(t *testing.T) (*Library, *Skill) {
	t.Helper()
	fsys := fstest.MapFS{
		"s/SKILL.md":            skSkillFile("s", "Resource tests."),
		"s/b.md":                {Data: []byte("# B\n")},
		"s/a.txt":               {Data: []byte("plain text\n")},
		"s/a/z.txt":             {Data: []byte("nested z")},
		"s/a/deeper/y.json":     {Data: []byte(`{"y":1}`)},
		"s/img/logo.png":        {Data: skPNG},
		"s/blob":                {Data: []byte{0, 1, 2, 3}},
		"s/noext":               {Data: []byte("text without extension")},
		"s/.hidden":             {Data: []byte("dot file")},
		"s/fifo":                {Mode: fs.ModeNamedPipe},
		"s/back\\slash":         {Data: []byte("unreachable name")},
		"s/emptydir":            {Mode: fs.ModeDir | 0o755},
		"other/SKILL.md":        skSkillFile("other", "Another skill."),
		"other/secret.txt":      {Data: []byte("OTHER-SKILL-SECRET")},
		"outside.txt":           {Data: []byte("REPO-SECRET")},
		"s/link-in":             {Mode: fs.ModeSymlink, Data: []byte("a/z.txt")},
		"s/link-dir":            {Mode: fs.ModeSymlink, Data: []byte("a")},
		"s/link-out":            {Mode: fs.ModeSymlink, Data: []byte("../outside.txt")},
		"s/link-other":          {Mode: fs.ModeSymlink, Data: []byte("../other/secret.txt")},
		"s/link-abs":            {Mode: fs.ModeSymlink, Data: []byte("/outside.txt")},
		"s/a/deeper/link-up":    {Mode: fs.ModeSymlink, Data: []byte("../../b.md")},
		"s/a/deeper/link-upout": {Mode: fs.ModeSymlink, Data: []byte("../../../outside.txt")},
	}
	l := skNewLibrary(t, Repository{"m", fsys})
	s, ok := l.Skill("s")
	if !ok {
		t.Fatalf("no skill s; problems %v", l.Problems())
	}
	return l, s
}

func TestResourcesListing(t *testing.T) {
	l, s := skResourceLibrary(t)
	got, err := l.Resources(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"SKILL.md", ".hidden", "a/deeper/link-up", "a/deeper/y.json", "a/z.txt", "a.txt",
		"b.md", "blob", "img/logo.png", "link-in", "noext",
	}
	if !slices.Equal(got, want) {
		t.Errorf("resources =\n%q\nwant\n%q", got, want)
	}
	// Every listed path can be read.
	for _, p := range got {
		if _, err := l.ReadResource(s, p, 0); err != nil {
			t.Errorf("listed %q but: %v", p, err)
		}
	}
}

func TestResourcesLimit(t *testing.T) {
	fsys := fstest.MapFS{"s/SKILL.md": skSkillFile("s", "Many files.")}
	for i := range maxResources + 50 {
		fsys[fmt.Sprintf("s/d%d/f%04d.txt", i%3, i)] = &fstest.MapFile{Data: []byte("x")}
	}
	l := skNewLibrary(t, Repository{"m", fsys})
	s, _ := l.Skill("s")
	got, err := l.Resources(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != maxResources || got[0] != "SKILL.md" || got[1] != "d0/f0000.txt" {
		t.Errorf("len %d, first %q", len(got), got[:2])
	}
	if !slices.IsSortedFunc(got[1:], comparePaths) {
		t.Error("not in walk order")
	}
}

func TestReadResourceText(t *testing.T) {
	l, s := skResourceLibrary(t)
	cases := []struct{ path, data, media string }{
		{"SKILL.md", "---\nname: s\n", "text/markdown"},
		{"a.txt", "plain text\n", "text/plain"},
		{"a/z.txt", "nested z", "text/plain"},
		{"a//deeper/y.json", `{"y":1}`, "application/json"},
		{"noext", "text without extension", "text/plain"},
		{".hidden", "dot file", "text/plain"},
		{"b.md", "# B\n", "text/markdown"},
	}
	for _, c := range cases {
		r, err := l.ReadResource(s, c.path, 0)
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if !strings.HasPrefix(string(r.Data), c.data) || r.Binary || r.Truncated || r.MediaType != c.media || r.Size != int64(len(r.Data)) {
			t.Errorf("%s: %+v", c.path, r)
		}
	}
	r, _ := l.ReadResource(s, "a//deeper/y.json", 0)
	if r.Path != "a/deeper/y.json" {
		t.Errorf("path = %q, want cleaned", r.Path)
	}
}

func TestReadResourceBinary(t *testing.T) {
	l, s := skResourceLibrary(t)
	r, err := l.ReadResource(s, "img/logo.png", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Binary || r.MediaType != "image/png" || !bytes.Equal(r.Data, skPNG) || r.Truncated {
		t.Errorf("png = %+v", r)
	}
	r, err = l.ReadResource(s, "blob", 0)
	if err != nil || !r.Binary || r.MediaType != "application/octet-stream" {
		t.Errorf("blob = %+v, %v", r, err)
	}
	// At the limit exactly is fine; one byte under is not.
	if _, err := l.ReadResource(s, "img/logo.png", int64(len(skPNG))); err != nil {
		t.Errorf("at limit: %v", err)
	}
	_, err = l.ReadResource(s, "img/logo.png", int64(len(skPNG)-1))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("binary file of %d bytes", len(skPNG))) {
		t.Errorf("err = %v", err)
	}
}

func TestReadResourceLarge(t *testing.T) {
	text := strings.Repeat("é", 200<<10) // 2 bytes per rune, 400 KiB
	bigBin := bytes.Repeat([]byte{0, 1}, 200<<10)
	// Invalid UTF-8 only after the first 8 KiB: still text.
	lateBad := strings.Repeat("a", sniffBytes+10) + "\xff"
	// A rune cut by the 8 KiB sniff window.
	straddle := strings.Repeat("a", sniffBytes-1) + "€" + "tail"
	l := skNewLibrary(t, Repository{"m", fstest.MapFS{
		"s/SKILL.md":    skSkillFile("s", "Large."),
		"s/big.txt":     {Data: []byte(text)},
		"s/big.bin":     {Data: bigBin},
		"s/late.txt":    {Data: []byte(lateBad)},
		"s/straddle.md": {Data: []byte(straddle)},
	}})
	s, _ := l.Skill("s")

	r, err := l.ReadResource(s, "big.txt", 0)
	if err != nil || !r.Truncated || len(r.Data) != defaultResourceLimit || r.Size != int64(len(text)) {
		t.Fatalf("default limit: len %d size %d truncated %v err %v", len(r.Data), r.Size, r.Truncated, err)
	}
	for _, limit := range []int64{1, 2, 3, 1001, sniffBytes - 1, sniffBytes, sniffBytes + 1, 100001} {
		r, err := l.ReadResource(s, "big.txt", limit)
		if err != nil {
			t.Fatal(err)
		}
		want := limit &^ 1 // cut back to a whole "é"
		if !r.Truncated || int64(len(r.Data)) != want || !utf8.Valid(r.Data) {
			t.Errorf("limit %d: len %d truncated %v", limit, len(r.Data), r.Truncated)
		}
	}
	if _, err := l.ReadResource(s, "big.bin", 0); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), `"big.bin" is a binary file of 409600 bytes, more than the limit of 262144`) {
		t.Errorf("big binary: %v", err)
	}
	if r, err := l.ReadResource(s, "big.bin", 1<<20); err != nil || !r.Binary || len(r.Data) != len(bigBin) {
		t.Errorf("big binary under a large limit: %v", err)
	}
	if r, err := l.ReadResource(s, "late.txt", 0); err != nil || r.Binary || string(r.Data) != lateBad {
		t.Errorf("late invalid byte: %+v %v", r.Binary, err)
	}
	if r, err := l.ReadResource(s, "straddle.md", 0); err != nil || r.Binary {
		t.Errorf("rune across the sniff window: binary=%v %v", r.Binary, err)
	}
	if r, err := l.ReadResource(s, "straddle.md", sniffBytes+1); err != nil || !r.Truncated || len(r.Data) != sniffBytes-1 {
		t.Errorf("cut inside a 3-byte rune: len %d truncated %v %v", len(r.Data), r.Truncated, err)
	}
}

func TestReadResourceBadPaths(t *testing.T) {
	l, s := skResourceLibrary(t)
	cases := []struct{ path, want string }{
		{"", "the path is empty"},
		{"/SKILL.md", "absolute paths are not allowed"},
		{"/etc/passwd", "absolute paths are not allowed"},
		{`\SKILL.md`, "absolute paths are not allowed"},
		{`\\server\share`, "absolute paths are not allowed"},
		{"C:", "drive letters are not allowed"},
		{`C:\Windows\win.ini`, "drive letters are not allowed"},
		{"c:SKILL.md", "drive letters are not allowed"},
		{"..", `".." is not allowed`},
		{"../outside.txt", `".." is not allowed`},
		{"a/../../outside.txt", `".." is not allowed`},
		{"a/..", `".." is not allowed`},
		{".", `"." elements are not allowed`},
		{"./", `ends with "/"`},
		{"./SKILL.md", `"." elements are not allowed`},
		{"a/./z.txt", `"." elements are not allowed`},
		{"a/", `ends with "/"`},
		{"a/z.txt/", `ends with "/"`},
		{`a\z.txt`, "backslashes are not allowed"},
		{`back\slash`, "backslashes are not allowed"},
		{"SKILL.md\x00", "NUL byte or another control character"},
		{"a\nb", "control character"},
		{"a\u0085b", "control character"},
		{"\xff", "not valid UTF-8"},
		{strings.Repeat("a", maxPathBytes+1), "more than the limit of 512"},
		{"a/" + strings.Repeat("b", 256), "is 256 bytes long, more than the limit of 255"},
		{"a", "it is a folder"},
		{"emptydir", "it is a folder"},
		{"link-dir", "it is a folder"},
		{"fifo", "not a regular file"},
		{"link-out", `symbolic link "link-out" leads outside the skill folder`},
		{"link-other", `symbolic link "link-other" leads outside the skill folder`},
		{"link-abs", `symbolic link "link-abs" points to an absolute path`},
		{"a/deeper/link-upout", `symbolic link "a/deeper/link-upout" leads outside`},
	}
	for _, c := range cases {
		r, err := l.ReadResource(s, c.path, 0)
		if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadResource(%q) = %q, %v; want ErrBadPath with %q", c.path, r.Data, err, c.want)
		}
	}
	// Exactly maxPathBytes, with names of 255 bytes, is only "not found".
	long := strings.Repeat("a", 255) + "/" + strings.Repeat("b", 254) + "/c"
	if _, err := l.ReadResource(s, long, 0); len(long) != maxPathBytes || !errors.Is(err, ErrNotFound) {
		t.Errorf("512-byte path: %v", err)
	}
}

func TestReadResourceNotFound(t *testing.T) {
	l, s := skResourceLibrary(t)
	for _, p := range []string{"nope.md", "a/nope", "nope/x", "a.txt/x", "skill.md"} {
		_, err := l.ReadResource(s, p, 0)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprintf("%q in skill \"s\"", p)) {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestReadResourceLinksInside(t *testing.T) {
	l, s := skResourceLibrary(t)
	for p, want := range map[string]string{
		"link-in":                "nested z",
		"link-dir/z.txt":         "nested z",
		"a/deeper/link-up":       "# B\n",
		"link-dir/deeper/y.json": `{"y":1}`,
	} {
		r, err := l.ReadResource(s, p, 0)
		if err != nil || string(r.Data) != want || r.Path != p {
			t.Errorf("%s: %+v, %v", p, r, err)
		}
	}
}

func TestReadResourceBadSkill(t *testing.T) {
	l, s := skResourceLibrary(t)
	if _, err := l.ReadResource(nil, "SKILL.md", 0); err == nil {
		t.Error("nil skill accepted")
	}
	foreign := *s
	foreign.Repository = "elsewhere"
	if _, err := l.ReadResource(&foreign, "SKILL.md", 0); err == nil || !strings.Contains(err.Error(), `repository "elsewhere"`) {
		t.Errorf("foreign skill: %v", err)
	}
	escaped := *s
	escaped.Dir = "../x"
	if _, err := l.ReadResource(&escaped, "SKILL.md", 0); err == nil {
		t.Error("skill folder outside the repository accepted")
	}
	if _, err := l.Resources(&escaped); err == nil {
		t.Error("skill folder outside the repository listed")
	}
}

const skSecret = "TOP-SECRET-OUTSIDE-THE-SKILL"

// skSymlinkTree builds, on disk:
//
//	base/secret.txt                 (outside the repository)
//	base/repo/outside.txt           (in the repository, outside every skill)
//	base/repo/one/...               the skill under test, with links
//	base/repo/two/private.txt       another skill's file
//
// and returns base.
func skSymlinkTree(t testing.TB) string {
	t.Helper()
	base := t.TempDir()
	files := map[string]string{
		"secret.txt":             skSecret,
		"repo/outside.txt":       skSecret,
		"repo/one/SKILL.md":      skSkillText("one", "Links."),
		"repo/one/doc.md":        "doc",
		"repo/one/sub/inner.txt": "inner",
		"repo/two/SKILL.md":      skSkillText("two", "Other."),
		"repo/two/private.txt":   skSecret,
	}
	for name, data := range files {
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"abs":          filepath.Join(base, "secret.txt"),
		"abs-inside":   filepath.Join(base, "repo/one/doc.md"),
		"rel":          "../../secret.txt",
		"repo-file":    "../outside.txt",
		"other-skill":  "../two/private.txt",
		"back-in":      "../one/doc.md",
		"outdir":       "../..",
		"outdir2":      "..",
		"sub/up-out":   "../../outside.txt",
		"chain1":       "chain2",
		"chain2":       "chain3",
		"chain3":       "sub/chain4",
		"sub/chain4":   "../doc.md",
		"chain-out":    "chain-out2",
		"chain-out2":   "sub/../../outside.txt",
		"loop":         "loop",
		"loop-a":       "loop-b",
		"loop-b":       "loop-a",
		"inside":       "sub/inner.txt",
		"subdir":       "sub",
		"sub/up":       "../doc.md",
		"sub/self":     ".",
		"dangling":     "missing.txt",
		"long1":        "long2",
		"long2":        "long3",
		"long3":        "long4",
		"long4":        "long5",
		"long5":        "long6",
		"long6":        "long7",
		"long7":        "long8",
		"long8":        "doc.md",
		"long0":        "long1",
		"dirlink-file": "sub/inner.txt/",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, "repo/one", filepath.FromSlash(name))); err != nil {
			t.Skip("cannot make symbolic links here:", err)
		}
	}
	return base
}

func TestReadResourceSymlinksOnDisk(t *testing.T) {
	base := skSymlinkTree(t)
	rooted, err := Dir("rooted", filepath.Join(base, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	// os.DirFS follows links anywhere: the confinement must come from
	// ReadResource alone.
	plain := Repository{"plain", os.DirFS(filepath.Join(base, "repo"))}
	for _, repo := range []Repository{rooted, plain} {
		t.Run(repo.Name, func(t *testing.T) {
			l := skNewLibrary(t, repo)
			s, ok := l.Skill("one")
			if !ok {
				t.Fatalf("problems: %v", l.Problems())
			}
			bad := map[string]string{
				"abs":                 "points to an absolute path",
				"abs-inside":          "points to an absolute path",
				"rel":                 `symbolic link "rel" leads outside the skill folder`,
				"repo-file":           `symbolic link "repo-file" leads outside`,
				"other-skill":         `symbolic link "other-skill" leads outside`,
				"back-in":             `symbolic link "back-in" leads outside`,
				"outdir/secret.txt":   `symbolic link "outdir" leads outside`,
				"outdir2/outside.txt": `symbolic link "outdir2" leads outside`,
				"outdir2/one/doc.md":  `symbolic link "outdir2" leads outside`,
				"sub/up-out":          `symbolic link "sub/up-out" leads outside`,
				"chain-out":           "a symbolic link on the way leads outside",
				"loop":                "more than 8 symbolic links",
				"loop-a":              "more than 8 symbolic links",
				"long0":               "more than 8 symbolic links",
				"subdir":              "it is a folder",
				"sub/self":            "it is a folder",
			}
			for p, want := range bad {
				r, err := l.ReadResource(s, p, 0)
				if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %q, %v; want ErrBadPath with %q", p, r.Data, err, want)
				}
			}
			for _, p := range []string{"dangling", "dirlink-file", "subdir/nope"} {
				if _, err := l.ReadResource(s, p, 0); !errors.Is(err, ErrNotFound) {
					t.Errorf("%s: %v, want ErrNotFound", p, err)
				}
			}
			good := map[string]string{
				"chain1":                "doc",
				"long1":                 "doc", // exactly 8 links
				"inside":                "inner",
				"subdir/inner.txt":      "inner",
				"sub/up":                "doc",
				"sub/self/inner.txt":    "inner",
				"subdir/self/self/up":   "doc",
				"sub/self/self/self/up": "doc",
			}
			for p, want := range good {
				r, err := l.ReadResource(s, p, 0)
				if err != nil || string(r.Data) != want {
					t.Errorf("%s: %q, %v; want %q", p, r.Data, err, want)
				}
			}
			got, err := l.Resources(s)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"SKILL.md", "chain1", "chain2", "chain3", "doc.md", "inside", "long1", "long2", "long3",
				"long4", "long5", "long6", "long7", "long8", "sub/chain4", "sub/inner.txt", "sub/up"}
			if !slices.Equal(got, want) {
				t.Errorf("resources =\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestSkillFileSymlink(t *testing.T) {
	base := t.TempDir()
	skWriteTree(t, base, map[string]string{
		"in/real.md":      skSkillText("in", "Linked inside."),
		"outfile.md":      skSkillText("out", "Outside."),
		"out/placeholder": "",
	})
	if err := os.Symlink("real.md", filepath.Join(base, "in/SKILL.md")); err != nil {
		t.Skip("cannot make symbolic links here:", err)
	}
	if err := os.Symlink("../outfile.md", filepath.Join(base, "out/SKILL.md")); err != nil {
		t.Fatal(err)
	}
	repo, _ := Dir("d", base)
	l := skNewLibrary(t, repo)
	if got := skNames(l.Skills()); !slices.Equal(got, []string{"in"}) {
		t.Errorf("skills = %v", got)
	}
	if p := l.Problems(); len(p) != 1 || p[0].Path != "out/SKILL.md" || !errors.Is(p[0], ErrBadPath) || !strings.Contains(p[0].Error(), "leads outside") {
		t.Errorf("problems = %v", p)
	}
}

func TestReadResourceFIFOOnDisk(t *testing.T) {
	dir := t.TempDir()
	skWriteTree(t, dir, map[string]string{"s/SKILL.md": skSkillText("s", "Fifo.")})
	if err := exec.Command("mkfifo", filepath.Join(dir, "s/pipe")).Run(); err != nil {
		t.Skip("no mkfifo:", err)
	}
	if err := os.Symlink("pipe", filepath.Join(dir, "s/pipe-link")); err != nil {
		t.Fatal(err)
	}
	repo, _ := Dir("d", dir)
	l := skNewLibrary(t, repo)
	s, _ := l.Skill("s")
	for _, p := range []string{"pipe", "pipe-link"} {
		// Would block forever if it were opened.
		if _, err := l.ReadResource(s, p, 0); !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if got, _ := l.Resources(s); !slices.Equal(got, []string{"SKILL.md"}) {
		t.Errorf("resources = %v", got)
	}
}
