package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// The demo's tools do real local work: they walk a folder, read files and
// report progress as they go.

type countLinesIn struct {
	Dir string `json:"dir" jsonschema:"folder to scan, relative to the demo's root"`
}

type langCount struct {
	Language string `json:"language"`
	Files    int    `json:"files"`
	Lines    int    `json:"lines"`
}

var languages = map[string]string{
	".go": "Go", ".md": "Markdown", ".js": "JavaScript", ".ts": "TypeScript", ".py": "Python",
	".html": "HTML", ".css": "CSS", ".json": "JSON", ".yaml": "YAML", ".yml": "YAML",
	".sh": "Shell", ".txt": "Text", ".mod": "Go module", ".sum": "Go checksums",
}

// countLines walks a folder and counts lines per language, reporting
// progress per file.
func (e *toolEnv) countLines() func(context.Context, countLinesIn) ([]langCount, error) {
	return func(ctx context.Context, in countLinesIn) ([]langCount, error) {
		byLang := map[string]*langCount{}
		err := e.eachFile(ctx, in.Dir, "counted", 0, func(f string) error {
			lang, ok := languages[strings.ToLower(filepath.Ext(f))]
			if !ok {
				return nil
			}
			n, err := lineCount(f)
			if err != nil {
				return nil // unreadable files are skipped, not fatal
			}
			lc := byLang[lang]
			if lc == nil {
				lc = &langCount{Language: lang}
				byLang[lang] = lc
			}
			lc.Files++
			lc.Lines += n
			return nil
		})
		if err != nil {
			return nil, err
		}
		out := make([]langCount, 0, len(byLang))
		for _, lc := range byLang {
			out = append(out, *lc)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Lines > out[j].Lines })
		return out, nil
	}
}

type hashFilesIn struct {
	Dir   string `json:"dir" jsonschema:"folder whose files to hash"`
	Limit int    `json:"limit,omitempty" jsonschema:"hash at most this many files" tool:"minimum=1,maximum=10000,default=200"`
}

// hashFiles computes SHA-256 digests and streams one line per file to the
// model as it goes.
func (e *toolEnv) hashFiles() func(context.Context, hashFilesIn) (string, error) {
	return func(ctx context.Context, in hashFilesIn) (string, error) {
		em := stream.From(ctx)
		hashed := 0
		err := e.eachFile(ctx, in.Dir, "hashed", in.Limit, func(f string) error {
			sum, err := sha256File(f)
			if err != nil {
				return err
			}
			fmt.Fprintf(em, "%s  %s\n", sum[:16], rel(e.root, f))
			hashed++
			return nil
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d files hashed", hashed), nil
	}
}

type searchIn struct {
	Dir   string `json:"dir" jsonschema:"folder to search"`
	Query string `json:"query" jsonschema:"text to look for (case-sensitive)" tool:"minLength=1"`
	Max   int    `json:"max_matches,omitempty" tool:"minimum=1,maximum=1000,default=20"`
}

// searchText finds lines containing a string.
func (e *toolEnv) searchText() func(context.Context, searchIn) (string, error) {
	return func(ctx context.Context, in searchIn) (string, error) {
		em := stream.From(ctx)
		matches := 0
		err := e.eachFile(ctx, in.Dir, "searched", 0, func(f string) error {
			fh, err := os.Open(f)
			if err != nil {
				return nil // unreadable files are skipped
			}
			defer fh.Close()
			sc := bufio.NewScanner(fh)
			for ln := 1; sc.Scan() && matches < in.Max; ln++ {
				if strings.Contains(sc.Text(), in.Query) {
					matches++
					fmt.Fprintf(em, "%s:%d: %s\n", rel(e.root, f), ln, strings.TrimSpace(sc.Text()))
				}
			}
			if matches >= in.Max {
				return errEnough
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d matches", matches), nil
	}
}

type noteIn struct {
	Title string `json:"title" jsonschema:"a short title, used as the file name" tool:"minLength=1,maxLength=64,pattern=^[A-Za-z0-9 _-]+$"`
	Text  string `json:"text" jsonschema:"the note" tool:"maxLength=10000"`
}

// writeNote saves a note in the demo's notes folder: a tool that changes
// something, so it is neither read-only nor run in parallel.
func writeNote(dir string) func(context.Context, noteIn) (string, error) {
	return func(ctx context.Context, in noteIn) (string, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		p := filepath.Join(dir, strings.ReplaceAll(in.Title, " ", "_")+".md")
		if err := os.WriteFile(p, []byte("# "+in.Title+"\n\n"+in.Text+"\n"), 0o644); err != nil {
			return "", err
		}
		return fmt.Sprintf("saved %s:\n# %s\n%s", p, in.Title, in.Text), nil
	}
}

type folderStatsIn struct {
	Dir string `json:"dir" jsonschema:"folder to measure, relative to the demo's root"`
}

// folderStats measures a folder (files, bytes, the largest files) through
// a deliberately unreliable channel: the first two attempts of every call
// fail with a transient error, so the Retry interceptor has work to do.
func (e *toolEnv) folderStats() func(context.Context, folderStatsIn) (string, error) {
	var mu sync.Mutex
	attempts := map[string]int{}
	return func(ctx context.Context, in folderStatsIn) (string, error) {
		em := stream.From(ctx)
		info, _ := toolkit.CallInfoFrom(ctx)
		key := info.Session + "/" + info.CallID
		mu.Lock()
		attempts[key]++
		n := attempts[key]
		mu.Unlock()
		if n <= 2 {
			em.Progress(fmt.Sprintf("attempt %d: the stats service did not answer", n), -1)
			return "", interceptors.Transient(fmt.Errorf("stats service unavailable (attempt %d)", n))
		}
		type sized struct {
			path string
			size int64
		}
		var all []sized
		var total int64
		err := e.eachFile(ctx, in.Dir, "measured", 0, func(f string) error {
			if st, err := os.Stat(f); err == nil {
				all = append(all, sized{rel(e.root, f), st.Size()})
				total += st.Size()
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		sort.Slice(all, func(i, j int) bool {
			return all[i].size > all[j].size || all[i].size == all[j].size && all[i].path < all[j].path
		})
		var b strings.Builder
		fmt.Fprintf(&b, "%d files, %d bytes in all (answered on attempt %d). Largest:\n", len(all), total, n)
		for _, f := range all[:min(5, len(all))] {
			fmt.Fprintf(&b, "  %8d  %s\n", f.size, f.path)
		}
		return b.String(), nil
	}
}

type inventoryIn struct {
	Dir string `json:"dir" jsonschema:"folder to list, relative to the demo's root"`
}

// fileInventory lists every file with its size, line count and hash
// prefix: a result far too large for a model's context on any real
// folder, which the Evict interceptor stores and replaces by a pointer.
func (e *toolEnv) fileInventory() func(context.Context, inventoryIn) (string, error) {
	return func(ctx context.Context, in inventoryIn) (string, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "%-64s %10s %8s  %s\n", "path", "bytes", "lines", "sha256")
		err := e.eachFile(ctx, in.Dir, "listed", 0, func(f string) error {
			st, err := os.Stat(f)
			if err != nil {
				return nil
			}
			lines, _ := lineCount(f)
			sum, _ := sha256File(f)
			fmt.Fprintf(&b, "%-64s %10d %8d  %.12s\n", rel(e.root, f), st.Size(), lines, sum)
			return nil
		})
		if err != nil {
			return "", err
		}
		return b.String(), nil
	}
}

// toolEnv is what the demo's tools share: the folder they work on, where
// notes go, and the pace that slows them down enough to watch.
type toolEnv struct {
	root  string
	notes string
	// step is a pause after each unit of work (a file): zero runs at full
	// speed; the demo's --speed sets it so that progress bars can be seen.
	step time.Duration
}

// errEnough ends an eachFile walk early without an error.
var errEnough = errors.New("enough")

// eachFile is the loop the folder tools share: it resolves the
// model-supplied dir inside the root, calls fn for each file under it (at
// most limit files when limit > 0), and after each reports "<verb> <path>"
// as progress and pauses at the demo's pace. It stops at cancellation, at
// fn's error, or quietly when fn returns errEnough.
func (e *toolEnv) eachFile(ctx context.Context, dir, verb string, limit int, fn func(path string) error) error {
	root, err := within(e.root, dir)
	if err != nil {
		return err
	}
	files, err := listFiles(ctx, root)
	if err != nil {
		return err
	}
	if limit > 0 {
		files = files[:min(len(files), limit)]
	}
	em := stream.From(ctx)
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(f)
		em.Step(verb+" "+rel(e.root, f), i+1, len(files))
		if errors.Is(err, errEnough) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := e.pace(ctx); err != nil {
			return err
		}
	}
	return nil
}

// pace pauses between units of work; it ends early when the call is
// cancelled, so a stopped call stops at once.
func (e *toolEnv) pace(ctx context.Context) error {
	if e.step <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(e.step)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type watchIn struct {
	Dir     string `json:"dir" jsonschema:"folder to watch, relative to the demo's root"`
	Seconds int    `json:"seconds,omitempty" jsonschema:"how long to watch" tool:"minimum=1,maximum=600,default=30"`
}

// watchFolder polls a folder for changed files until its time is up or
// the call is cancelled: a long-running tool that the demo's user stops.
func (e *toolEnv) watchFolder() func(context.Context, watchIn) (string, error) {
	return func(ctx context.Context, in watchIn) (string, error) {
		dir, err := within(e.root, in.Dir)
		if err != nil {
			return "", err
		}
		snapshot := func() (map[string]time.Time, error) {
			files, err := listFiles(ctx, dir)
			if err != nil {
				return nil, err
			}
			m := make(map[string]time.Time, len(files))
			for _, f := range files {
				if st, err := os.Stat(f); err == nil {
					m[f] = st.ModTime()
				}
			}
			return m, nil
		}
		before, err := snapshot()
		if err != nil {
			return "", err
		}
		em := stream.From(ctx)
		total := time.Duration(in.Seconds) * time.Second
		start := time.Now()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		changed := 0
		for time.Since(start) < total {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-tick.C:
			}
			now, err := snapshot()
			if err != nil {
				return "", err
			}
			for f, mt := range now {
				if old, ok := before[f]; !ok || !old.Equal(mt) {
					changed++
					fmt.Fprintf(em, "changed: %s\n", rel(e.root, f))
				}
			}
			before = now
			el := time.Since(start)
			em.Progress(fmt.Sprintf("watching %d files, %d changes, %v left", len(now), changed, (total-el).Round(time.Second)), float64(el)/float64(total))
		}
		return fmt.Sprintf("%d changes in %d seconds", changed, in.Seconds), nil
	}
}

// askUserSchema is the input of ask_user, an external tool: the toolkit
// never runs it; the call waits until someone outside submits the answer.
const askUserSchema = `{"type":"object","properties":{"question":{"type":"string","minLength":1,"description":"what to ask the user"}},"required":["question"],"additionalProperties":false}`

//go:embed skills
var demoSkills embed.FS

// registerTools registers the demo's tools: count_lines, watch_folder and
// ask_user are basic (always there), the others come in two groups the
// model switches on, by reset_tools or by loading a skill bound to them.
func registerTools(tk *toolkit.Toolkit, e *toolEnv, gopts []groups.Option, sopts []skills.Option) (*groups.Manager, *skills.Loader, error) {
	ask, err := toolkit.NewExternalTool(toolkit.Spec{Name: "ask_user", Description: "Ask the user a question and wait for the answer (answered outside this process).", ReadOnly: true, Timeout: 2 * time.Minute}, json.RawMessage(askUserSchema))
	if err != nil {
		return nil, nil, err
	}
	if err := tk.Add(
		toolkit.MustTool(toolkit.Spec{Name: "count_lines", Description: "Count lines of code per language under a folder.", ReadOnly: true, ConcurrencySafe: true}, e.countLines()),
		toolkit.MustTool(toolkit.Spec{Name: "watch_folder", Description: "Watch a folder for changed files for some seconds and list them.", ReadOnly: true, ConcurrencySafe: true, Timeout: 11 * time.Minute}, e.watchFolder()),
		ask,
		toolkit.MustTool(toolkit.Spec{Name: "hash_files", Description: "SHA-256 of the files under a folder, one line per file.", ReadOnly: true, ConcurrencySafe: true}, e.hashFiles()),
		toolkit.MustTool(toolkit.Spec{Name: "search_text", Description: "Find lines containing a text under a folder.", ReadOnly: true, ConcurrencySafe: true}, e.searchText()),
		toolkit.MustTool(toolkit.Spec{Name: "write_note", Description: "Save a short note for the user."}, writeNote(e.notes)),
		toolkit.MustTool(toolkit.Spec{Name: "folder_stats", Description: "Size of a folder and its largest files (through a flaky service: retried).", ReadOnly: true, ConcurrencySafe: true}, e.folderStats()),
		toolkit.MustTool(toolkit.Spec{Name: "file_inventory", Description: "Every file under a folder with size, lines and hash (large: stored, not shown in full).", ReadOnly: true, ConcurrencySafe: true}, e.fileInventory()),
	); err != nil {
		return nil, nil, err
	}
	gm, err := groups.Install(tk, append([]groups.Option{groups.WithToolSearch()}, gopts...)...) // tool_search beside reset_tools
	if err != nil {
		return nil, nil, err
	}
	if err := gm.Add(
		groups.Group{Name: "files", Description: "Look inside files: hashes, text search, sizes and inventories.",
			Instructions: "Paths are relative to the demo's root. Prefer search_text with a precise query over reading many files.",
			Tools:        []string{"hash_files", "search_text", "folder_stats", "file_inventory"}},
		groups.Group{Name: "notes", Description: "Save notes for the user.",
			Instructions: "Keep titles short; one note per topic.",
			Tools:        []string{"write_note"}},
	); err != nil {
		return nil, nil, err
	}
	sub, err := fs.Sub(demoSkills, "skills")
	if err != nil {
		return nil, nil, err
	}
	lib, err := skills.NewLibrary(skills.Repository{Name: "demo", FS: sub})
	if err != nil {
		return nil, nil, err
	}
	for _, p := range lib.Problems() {
		return nil, nil, fmt.Errorf("demo skill: %v", p)
	}
	ld, err := skills.Install(tk, lib, append([]skills.Option{skills.WithGroups(gm)}, sopts...)...)
	return gm, ld, err
}

// within resolves a model-supplied folder inside root and refuses escapes.
func within(root, dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	if filepath.IsAbs(dir) {
		return "", fmt.Errorf("dir %q must be relative to the demo's root", dir)
	}
	p := filepath.Join(root, dir)
	if r, err := filepath.Rel(root, p); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("dir %q is outside the demo's root", dir)
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("dir %q: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%q is not a folder", dir)
	}
	return p, nil
}

// listFiles returns regular files under dir, skipping hidden folders and
// installed packages (node_modules): they are not the folder's own work,
// and one npm install would outweigh everything else.
func listFiles(ctx context.Context, dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() && p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

func lineCount(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 32*1024)
	n := 0
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
