package bundle

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// FS returns a read-only fs.FS of the witness directory at dir (relative
// to the bundle's root) that holds exactly the listed files, each one
// verified (Verified) before FS returns: Open serves only them, ReadDir
// lists only them and the directories on their paths, and nothing of the
// disk beyond them is reachable (no symlink, no unlisted file, no "..").
// Every file must be beneath dir. The first file that fails is the error.
// A library given this FS reads what the evidence recorded and cannot
// write, repair or follow anything.
func (b *Bundle) FS(dir string, files []evidence.WitnessFile) (fs.FS, error) {
	if _, err := checkRel("serve", dir); err != nil {
		return nil, err
	}
	v := &verifiedFS{nodes: map[string]*node{".": {name: ".", dir: true}}}
	for _, wf := range files {
		inside, ok := strings.CutPrefix(wf.Path, dir+"/")
		if !ok {
			return nil, &Error{Op: "serve", Path: wf.Path, Err: ErrEscapes, Detail: "not beneath " + dir}
		}
		f, err := b.Verified(wf.Path, wf.Size, wf.SHA256)
		if err != nil {
			return nil, err
		}
		if err := v.add(inside, f); err != nil {
			return nil, &Error{Op: "serve", Path: wf.Path, Err: ErrNotRegular, Detail: err.Error()}
		}
	}
	for _, n := range v.nodes {
		slices.Sort(n.children)
	}
	return v, nil
}

// Input is one verified file for a reader that takes named streams (the
// binlog reader): its base name and a reader of its bytes.
type Input struct {
	Name string
	R    *io.SectionReader
}

// Inputs verifies the listed files (Verified) and returns a reader of
// each, in the order given, named by its base name. The first file that
// fails is the error.
func (b *Bundle) Inputs(files []evidence.WitnessFile) ([]Input, error) {
	out := make([]Input, 0, len(files))
	for _, wf := range files {
		f, err := b.Verified(wf.Path, wf.Size, wf.SHA256)
		if err != nil {
			return nil, err
		}
		out = append(out, Input{Name: f.Name(), R: f.Reader()})
	}
	return out, nil
}

// verifiedFS is the tree of a witness directory's verified files.
type verifiedFS struct {
	nodes map[string]*node // by path inside the directory; "." is the root
}

type node struct {
	name     string
	dir      bool
	file     *File
	children []string // names, sorted
}

// add puts a verified file and the directories on its path in the tree.
func (v *verifiedFS) add(inside string, f *File) error {
	if n, ok := v.nodes[inside]; ok {
		if n.dir || n.file != f {
			return errors.New("listed twice, or both as a file and a directory")
		}
		return nil
	}
	v.nodes[inside] = &node{name: path.Base(inside), file: f}
	for child := inside; ; {
		parent := path.Dir(child)
		p, ok := v.nodes[parent]
		if ok && !p.dir {
			return errors.New(parent + " is listed as a file and holds files")
		}
		if !ok {
			p = &node{name: path.Base(parent), dir: true}
			v.nodes[parent] = p
		}
		p.children = append(p.children, path.Base(child))
		if ok || parent == "." {
			return nil
		}
		child = parent
	}
}

func (v *verifiedFS) lookup(op, name string) (*node, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	n, ok := v.nodes[name]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

// Open implements fs.FS.
func (v *verifiedFS) Open(name string) (fs.File, error) {
	n, err := v.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return &openDir{v: v, n: n, path: name}, nil
	}
	return &openFile{SectionReader: n.file.Reader(), n: n}, nil
}

// ReadFile implements fs.ReadFileFS: a copy of the file's bytes.
func (v *verifiedFS) ReadFile(name string) ([]byte, error) {
	n, err := v.lookup("readfile", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: errors.New("is a directory")}
	}
	buf := make([]byte, n.file.Size())
	if _, err := io.ReadFull(n.file.Reader(), buf); err != nil {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: err}
	}
	return buf, nil
}

// Stat implements fs.StatFS.
func (v *verifiedFS) Stat(name string) (fs.FileInfo, error) {
	n, err := v.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return info{n}, nil
}

// ReadDir implements fs.ReadDirFS.
func (v *verifiedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := v.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	return v.entries(name, n), nil
}

func (v *verifiedFS) entries(dir string, n *node) []fs.DirEntry {
	out := make([]fs.DirEntry, len(n.children))
	for i, c := range n.children {
		p := c
		if dir != "." {
			p = dir + "/" + c
		}
		out[i] = fs.FileInfoToDirEntry(info{v.nodes[p]})
	}
	return out
}

// info is a node's fs.FileInfo: read-only, no time (the bundle records
// none that a reader should use).
type info struct{ n *node }

func (i info) Name() string { return i.n.name }
func (i info) Size() int64 {
	if i.n.dir {
		return 0
	}
	return i.n.file.Size()
}

func (i info) Mode() fs.FileMode {
	if i.n.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.n.dir }
func (i info) Sys() any           { return nil }

type openFile struct {
	*io.SectionReader
	n *node
}

func (f *openFile) Stat() (fs.FileInfo, error) { return info{f.n}, nil }
func (f *openFile) Close() error               { return nil }

type openDir struct {
	v    *verifiedFS
	n    *node
	path string
	read int
}

func (d *openDir) Stat() (fs.FileInfo, error) { return info{d.n}, nil }
func (d *openDir) Close() error               { return nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: errors.New("is a directory")}
}

// ReadDir implements fs.ReadDirFile.
func (d *openDir) ReadDir(count int) ([]fs.DirEntry, error) {
	all := d.v.entries(d.path, d.n)
	rest := all[d.read:]
	if count <= 0 {
		d.read = len(all)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(count, len(rest))]
	d.read += len(rest)
	return rest, nil
}
