package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync/atomic"
)

// Reading a data directory's files within the limits: the checker that
// planDataFS (datafs.go) runs over them.

// checker reads fsys within the limits and says which file it is at, so
// that a refusal (or a recovered panic) names it.
type checker struct {
	ctx  context.Context
	fsys fs.FS
	at   string
	// spent is what the directory's checking has read and decoded so far,
	// against the limits: one for the checkers of partitions checked at
	// once (checkPartitions).
	spent *spent
	keep  bool
	// drop: a compressed batch's records are checked in dec's buffer and
	// not kept (planDataFS).
	drop bool
	dec  decompressor
	// cur gathers the batches of the partition being checked.
	cur []batch
}

// spent counts the files read, their bytes, the bytes their records
// decompress to and the records, against MaxFiles, MaxDataBytes,
// MaxDecodedBytes and MaxRecords. A count is added before it is held to
// its limit, so that checkers adding at once never pass it together.
type spent struct{ files, read, decoded, records atomic.Int64 }

func damaged(name, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrDamaged, name, fmt.Sprintf(format, args...))
}

func limited(name, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrLimit, name, fmt.Sprintf(format, args...))
}

// readFile reads one regular file of at most max bytes. The size is
// checked before reading (Stat) and while reading (a file that grows is
// refused too), so a declared size never drives an allocation beyond max.
func (c *checker) readFile(name string, max int64) ([]byte, error) {
	c.at = name
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	if c.spent.files.Add(1) > MaxFiles {
		return nil, limited(name, "more than %d files", MaxFiles)
	}
	f, err := c.fsys.Open(name)
	if err != nil {
		return nil, damaged(name, "open: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, damaged(name, "stat: %v", err)
	}
	if !st.Mode().IsRegular() {
		return nil, damaged(name, "not a regular file (%v)", st.Mode().Type())
	}
	if st.Size() > max {
		return nil, limited(name, "%d bytes, more than the %d allowed", st.Size(), max)
	}
	if c.spent.read.Add(st.Size()) > MaxDataBytes {
		return nil, limited(name, "the directory holds more than %d bytes", MaxDataBytes)
	}
	// One buffer of the size stat gave, and a byte more to see a file
	// that grew: not io.ReadAll's doubling from 512 bytes (0.2 s of
	// clearing memory for the 140 MB of a million records).
	b := make([]byte, st.Size()+1)
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, damaged(name, "read: %v", err)
	}
	b = b[:n]
	if int64(len(b)) != st.Size() {
		return nil, damaged(name, "changed size while read (%d bytes, stat said %d)", len(b), st.Size())
	}
	return b, nil
}

// readDir lists a directory, refusing more than max entries and any entry
// that is neither a regular file nor a directory.
func (c *checker) readDir(name string, max int) ([]fs.DirEntry, error) {
	c.at = name
	f, err := c.fsys.Open(name)
	if err != nil {
		return nil, damaged(name, "open directory: %v", err)
	}
	defer f.Close()
	var ents []fs.DirEntry
	if rd, ok := f.(fs.ReadDirFile); ok {
		for {
			batch, err := rd.ReadDir(256)
			ents = append(ents, batch...)
			if len(ents) > max {
				return nil, limited(name, "more than %d entries", max)
			}
			if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
				break
			}
			if err != nil {
				return nil, damaged(name, "list: %v", err)
			}
		}
	} else if ents, err = fs.ReadDir(c.fsys, name); err != nil {
		return nil, damaged(name, "list: %v", err)
	} else if len(ents) > max {
		return nil, limited(name, "more than %d entries", max)
	}
	for _, e := range ents {
		if t := e.Type(); t != 0 && t != fs.ModeDir {
			return nil, damaged(path.Join(name, e.Name()), "not a regular file or directory (%v)", t)
		}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// anything after the value.
func decodeStrict(name string, b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return damaged(name, "%v", err)
	}
	if dec.More() {
		return damaged(name, "data after the JSON value")
	}
	return nil
}
