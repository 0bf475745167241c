package interceptors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Backend stores the full text of results that [Evict] takes out of the
// conversation.
type Backend interface {
	// Put stores data under name (a plain file name, see [ValidResultName]:
	// the tool's name, a hash of the call's ids and ".txt") and returns where it is, in a form
	// that the model, or a tool it calls, can use to read it back. Putting a
	// name again replaces what was there.
	Put(ctx context.Context, name string, data []byte) (location string, err error)
}

// Defaults of the folder backend.
const (
	defaultEvictMaxFiles       = 1000
	defaultEvictMaxBytes int64 = 256 << 20
)

// defaultEvictDir returns the folder [Evict] stores results in by default:
// "toolstream-results" in the system's temporary folder.
func defaultEvictDir() string { return filepath.Join(os.TempDir(), "toolstream-results") }

// DirBackend returns a [Backend] that keeps results as files in dir, created
// if needed (mode 0700; files are 0600); "" is the default folder,
// "toolstream-results" in the system's temporary folder. Locations are
// absolute file paths.
//
// After each write the oldest files are deleted until at most maxFiles files
// and maxBytes bytes remain (a value of 0 or less means no limit of that
// kind); a result larger than maxBytes is refused rather than stored and
// deleted at once. A file stored in the last 10 minutes is never deleted:
// its reference may have just gone to the model (another call of the same
// batch), which reads it later. When the limits cannot be kept without
// deleting such a file, the new result is refused with an error that says
// so (Evict then truncates it). Give it a folder of its own: retention
// counts and deletes every regular file in it whose name could be a stored
// name.
//
// A folder that is a symbolic link or, on Unix, that other users may write
// to is refused, so that nobody else can swap a stored result for text of
// their own. Files are written under a temporary name and renamed into
// place, so a symbolic link planted at a name is replaced, never followed.
func DirBackend(dir string, maxFiles int, maxBytes int64) Backend {
	if dir == "" {
		dir = defaultEvictDir()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &evictDir{dir: dir, maxFiles: maxFiles, maxBytes: maxBytes}
}

type evictDir struct {
	dir      string
	maxFiles int
	maxBytes int64

	mu    sync.Mutex // one write and clean-up at a time, so each sees the others' files
	ready bool       // the folder was created and checked
}

// evictTmpPrefix starts the names of files being written; retention
// removes stale ones a crash left behind.
const evictTmpPrefix = ".evict-tmp-"

// evictStaleTmp is how old a temporary file must be to count as left over.
const evictStaleTmp = time.Hour

func (d *evictDir) Put(ctx context.Context, name string, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !ValidResultName(name) {
		return "", fmt.Errorf("invalid result name %q", name)
	}
	if d.maxBytes > 0 && int64(len(data)) > d.maxBytes {
		return "", fmt.Errorf("the result (%d bytes) is larger than the folder's limit of %d bytes", len(data), d.maxBytes)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.prepare(); err != nil {
		return "", err
	}
	files, limited := d.list(name)
	if limited {
		if err := d.room(files, int64(len(data))); err != nil {
			return "", err
		}
	}
	path := filepath.Join(d.dir, name)
	if err := d.write(path, data); err != nil {
		return "", err
	}
	if limited {
		d.prune(files, int64(len(data)))
	}
	return path, nil
}

// evictHold is how long a stored result is safe from retention: its
// reference has just gone, or is about to go, to the model with its batch's
// results, and the model reads it after that. See [DirBackend].
var evictHold = 10 * time.Minute

// storedFile is a stored result in the folder.
type storedFile struct {
	name string
	size int64
	mod  time.Time
}

// held reports whether retention must leave f alone.
func (f storedFile) held(now time.Time) bool { return now.Sub(f.mod) < evictHold }

// list returns the stored results in the folder other than name, oldest
// first, and whether the folder has limits at all. It removes temporary
// files a crash left behind.
func (d *evictDir) list(name string) ([]storedFile, bool) {
	if d.maxFiles <= 0 && d.maxBytes <= 0 {
		return nil, false
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, false
	}
	var files []storedFile
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		n := e.Name()
		if strings.HasPrefix(n, evictTmpPrefix) {
			if time.Since(info.ModTime()) > evictStaleTmp {
				os.Remove(filepath.Join(d.dir, n))
			}
			continue
		}
		if ValidResultName(n) && n != name {
			files = append(files, storedFile{n, info.Size(), info.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b storedFile) int {
		return cmp.Or(a.mod.Compare(b.mod), strings.Compare(a.name, b.name))
	})
	return files, true
}

// room refuses a result of size bytes that would fit the limits only if
// retention deleted results stored within [evictHold]: their references
// may be in the hands of a model that has not read them yet (another call
// of the same batch, say). Evict then truncates the result and says why.
func (d *evictDir) room(files []storedFile, size int64) error {
	now := time.Now()
	count, total := 1, size
	for _, f := range files {
		if f.held(now) {
			count++
			total += f.size
		}
	}
	if d.maxFiles > 0 && count > d.maxFiles || d.maxBytes > 0 && total > d.maxBytes {
		return fmt.Errorf("the result folder keeps at most %s, and results stored in the last %v, which the model may still read, "+
			"already take %d files and %d bytes: nothing older can make room (raise the folder's retention limits)",
			d.limits(), evictHold, count-1, total-size)
	}
	return nil
}

func (d *evictDir) limits() string {
	switch {
	case d.maxFiles <= 0:
		return fmt.Sprintf("%d bytes", d.maxBytes)
	case d.maxBytes <= 0:
		return fmt.Sprintf("%d files", d.maxFiles)
	}
	return fmt.Sprintf("%d files and %d bytes", d.maxFiles, d.maxBytes)
}

// prepare creates the folder once and checks that it is private.
func (d *evictDir) prepare() error {
	if d.ready {
		return nil
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(d.dir)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("result folder %s is a symbolic link", d.dir)
	case !fi.IsDir():
		return fmt.Errorf("result folder %s is not a folder", d.dir)
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0:
		// Windows reports synthetic permission bits; its ACLs are not checked.
		return fmt.Errorf("result folder %s may be written by other users (mode %v); use a private folder", d.dir, fi.Mode().Perm())
	}
	d.ready = true
	return nil
}

func (d *evictDir) write(path string, data []byte) error {
	f, err := os.CreateTemp(d.dir, evictTmpPrefix+"*")
	if err != nil {
		d.ready = false // the folder may have been removed: check it again next time
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// prune deletes the oldest of files (the others stored before a result of
// size bytes was written) until the limits hold, leaving alone those still
// within [evictHold].
func (d *evictDir) prune(files []storedFile, size int64) {
	now := time.Now()
	count, total := len(files)+1, size
	for _, f := range files {
		total += f.size
	}
	for _, f := range files {
		if (d.maxFiles <= 0 || count <= d.maxFiles) && (d.maxBytes <= 0 || total <= d.maxBytes) {
			break
		}
		if f.held(now) {
			continue
		}
		if err := os.Remove(filepath.Join(d.dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		count--
		total -= f.size
	}
}

// ValidResultName reports whether name is a name a [Backend] accepts: 1 to
// 200 letters, digits, '_', '-' and '.', not starting with '.'. Such a name is a
// plain file name that cannot point anywhere but into a folder.
func ValidResultName(name string) bool {
	if name == "" || len(name) > 200 || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
