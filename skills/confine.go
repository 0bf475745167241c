package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
)

// source is a repository as the library reads it.
//
// A repository on disk (made by [Dir], or an os.DirFS) is read through
// os.Root: every read opens the skill's own folder as a Root and opens the
// file inside it, so the operating system refuses any path, symbolic link
// or concurrent change that would lead outside the skill folder. Other
// file systems get only the package's own element-by-element check, which
// runs before the open (see [NewLibrary]).
type source struct {
	fsys fs.FS
	dir  string // the repository's folder, opened for each scan and read ([Dir], os.DirFS)
}

// dirFSType is the type of os.DirFS's file systems. The package recognises
// it so that a repository built on os.DirFS is confined like one from Dir;
// os.DirFS keeps its folder as a string, which is all that is needed.
var dirFSType = reflect.TypeOf(os.DirFS("."))

func newSource(fsys fs.FS) *source {
	src := &source{fsys: fsys}
	if d, ok := fsys.(*diskFS); ok {
		src.dir = d.dir
	} else if v := reflect.ValueOf(fsys); v.Type() == dirFSType && v.Kind() == reflect.String {
		src.dir = v.String()
	}
	return src
}

// rootFS is what os.Root.FS returns.
type rootFS interface {
	fs.ReadDirFS
	fs.ReadFileFS
	fs.ReadLinkFS
	fs.StatFS
}

// diskFS is the file system of a repository made by Dir: each call opens
// the folder at dir (an absolute path) as an os.Root and works through it,
// so that a folder swapped in at that path is the one read. Its opens do
// not wait (see waitFreeFS). Files it returns stay open after the Root is
// closed.
type diskFS struct {
	dir string
}

// Open implements fs.FS.
func (d *diskFS) Open(name string) (fs.File, error) { return inRoot(d, name, waitFreeFS.Open) }

// ReadDir implements fs.ReadDirFS.
func (d *diskFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return inRoot(d, name, waitFreeFS.ReadDir)
}

// ReadFile implements fs.ReadFileFS.
func (d *diskFS) ReadFile(name string) ([]byte, error) { return inRoot(d, name, waitFreeFS.ReadFile) }

// Stat implements fs.StatFS.
func (d *diskFS) Stat(name string) (fs.FileInfo, error) { return inRoot(d, name, waitFreeFS.Stat) }

// ReadLink implements fs.ReadLinkFS.
func (d *diskFS) ReadLink(name string) (string, error) { return inRoot(d, name, waitFreeFS.ReadLink) }

// Lstat implements fs.ReadLinkFS.
func (d *diskFS) Lstat(name string) (fs.FileInfo, error) { return inRoot(d, name, waitFreeFS.Lstat) }

// inRoot applies op to name in the folder now at d's path, opened for the
// call.
func inRoot[T any](d *diskFS, name string, op func(waitFreeFS, string) (T, error)) (T, error) {
	w, done, err := openWaitFree(d.dir)
	if err != nil {
		var zero T
		return zero, err
	}
	defer done()
	return op(w, name)
}

// openWaitFree opens the folder at dir as an os.Root and returns its file
// system, whose opens do not wait, and the function that closes the Root.
func openWaitFree(dir string) (waitFreeFS, func(), error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return waitFreeFS{}, nil, err
	}
	return waitFree(r), func() { r.Close() }, nil
}

// waitFree returns r's file system, whose opens do not wait.
func waitFree(r *os.Root) waitFreeFS { return waitFreeFS{r.FS().(rootFS), r} }

// waitFreeFS is the file system of a folder opened as an os.Root, whose
// Open and ReadDir do not wait: files are opened with O_NONBLOCK, so that a
// named pipe swapped in after a path was checked opens at once (and is then
// refused, as not a regular file or not a folder) instead of blocking until
// something writes to it. For regular files and folders the flag changes
// nothing.
type waitFreeFS struct {
	rootFS
	root *os.Root
}

// Open implements fs.FS.
func (w waitFreeFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := w.root.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadDir implements fs.ReadDirFS, sorted by name as fs.ReadDir is.
func (w waitFreeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := w.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not implemented")}
	}
	list, err := dir.ReadDir(-1)
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return list, err
}

// ReadFile implements fs.ReadFileFS through Open.
func (w waitFreeFS) ReadFile(name string) ([]byte, error) {
	f, err := w.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// scanFS returns the file system to look for skills in and a function to
// call when done. For a repository on disk it is the folder now at the
// repository's path, opened once for the whole scan, its folders listed
// without waiting.
func (src *source) scanFS() (fs.FS, func(), error) {
	if src.dir == "" {
		return src.fsys, func() {}, nil
	}
	w, done, err := openWaitFree(src.dir)
	if err != nil {
		return nil, nil, err
	}
	return w, done, nil
}

// confined reports whether reads are confined by the operating system.
func (src *source) confined() bool { return src.dir != "" }

// openSkill returns the file system to read the skill folder dir through,
// the folder's path in it, and a function to call when done. For a
// repository on disk the file system is the skill folder itself, opened as
// an os.Root: whatever happens to the tree meanwhile, nothing outside the
// folder can be opened through it.
func (src *source) openSkill(dir string) (fs.FS, string, func(), error) {
	if !src.confined() {
		return src.fsys, dir, func() {}, nil
	}
	// The folder now at the repository's path (a deploy may have swapped
	// another in since the last read).
	repo, err := os.OpenRoot(src.dir)
	if err != nil {
		return nil, "", nil, err
	}
	defer repo.Close()
	sr, err := openFolder(repo, dir)
	if err != nil {
		return nil, "", nil, err
	}
	return waitFree(sr), ".", func() { sr.Close() }, nil
}

// openFolder opens the folder dir (a valid fs path) of root as a Root of
// its own, one element at a time. Each element must be a real folder, not
// a symbolic link: Root.OpenRoot follows links that stay inside root, so a
// folder swapped for a link to another skill would otherwise be entered.
// After each open, the element is looked at again without following links
// and must be the very folder that was opened; as each step is relative to
// the folder opened before it, no change elsewhere in the tree matters.
func openFolder(root *os.Root, dir string) (*os.Root, error) {
	cur, err := root.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	if dir == "." {
		return cur, nil
	}
	for _, e := range strings.Split(dir, "/") {
		next, err := cur.OpenRoot(e)
		if err != nil {
			cur.Close()
			return nil, err
		}
		err = sameFolder(cur, next, e)
		cur.Close()
		if err != nil {
			next.Close()
			return nil, fmt.Errorf("%w: the skill folder %q: %v", ErrBadPath, dir, err)
		}
		cur = next
	}
	return cur, nil
}

// sameFolder checks that name in parent is, now, a folder and not a link,
// and the folder that opened holds.
func sameFolder(parent, opened *os.Root, name string) error {
	li, err := parent.Lstat(name)
	if err != nil {
		return err
	}
	if !li.IsDir() {
		return fmt.Errorf("%q is not a folder (a symbolic link?)", name)
	}
	oi, err := opened.Stat(".")
	if err != nil {
		return err
	}
	if !os.SameFile(li, oi) {
		return fmt.Errorf("%q changed while it was opened", name)
	}
	return nil
}
