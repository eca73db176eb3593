package bundle

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Listing is what List found beneath a directory of the bundle.
type Listing struct {
	// Files are the regular files, as paths relative to the bundle's
	// root, sorted.
	Files []string
	// Refused are the entries that are neither a directory nor a regular
	// file (symlinks, FIFOs, devices, sockets), each an *Error naming it.
	// Nothing is followed or opened: a reader of the directory would meet
	// them, so a caller treats them as a fault of the bundle.
	Refused []error
}

// List walks the directory at rel beneath the bundle's root without
// following symlinks: directories are entered, regular files listed,
// anything else refused (Listing.Refused). rel itself must be a real
// directory on a path without symlinks: else the error is an *Error
// wrapping ErrMissing, ErrNotDirectory, ErrLink or ErrEscapes. A walk of
// more than MaxFiles entries stops with ErrTooLarge.
func (b *Bundle) List(rel string) (*Listing, error) {
	if _, err := checkRel("list", rel); err != nil {
		return nil, err
	}
	out := &Listing{}
	entries := 0
	stack := []string{rel}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		subdirs, err := b.readDir(d, out, &entries)
		if err != nil {
			return nil, err
		}
		stack = append(stack, subdirs...)
	}
	slices.Sort(out.Files)
	return out, nil
}

// readDir reads one directory of a walk (opened as dir opens it: through
// no symlink), in batches (a directory of millions of entries is not read
// whole), and returns its subdirectories.
func (b *Bundle) readDir(rel string, out *Listing, entries *int) ([]string, error) {
	d, release, err := b.dir("list", rel, strings.Split(rel, "/"))
	if err != nil {
		return nil, err
	}
	defer release()
	dir, err := d.Open(".")
	if err != nil {
		return nil, &Error{Op: "list", Path: rel, Err: classify(err), Detail: err.Error(), cause: err}
	}
	defer dir.Close()
	var subdirs []string
	for {
		batch, err := dir.ReadDir(256)
		for _, e := range batch {
			if *entries++; *entries > MaxFiles {
				return nil, &Error{Op: "list", Path: rel, Err: ErrTooLarge, Detail: fmt.Sprintf("more than %d entries", MaxFiles)}
			}
			p := rel + "/" + e.Name()
			switch t := e.Type(); {
			case t.IsDir():
				if strings.Count(p, "/")+1 >= MaxDepth {
					out.Refused = append(out.Refused, &Error{Op: "list", Path: p, Err: ErrEscapes,
						Detail: fmt.Sprintf("directories nested deeper than %d", MaxDepth)})
					continue
				}
				subdirs = append(subdirs, p)
			case t.IsRegular():
				out.Files = append(out.Files, p)
			case t&fs.ModeSymlink != 0:
				out.Refused = append(out.Refused, &Error{Op: "list", Path: p, Err: ErrLink})
			default:
				out.Refused = append(out.Refused, &Error{Op: "list", Path: p, Err: ErrNotRegular, Detail: "it is a " + evidence.FileTypeName(t)})
			}
		}
		if errors.Is(err, io.EOF) {
			return subdirs, nil
		}
		if err != nil {
			return nil, &Error{Op: "list", Path: rel, Err: ErrNotDirectory, Detail: err.Error(), cause: err}
		}
	}
}
