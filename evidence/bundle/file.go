package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
)

// File is one regular file of a bundle that passed the gate: from
// OpenFile (checked, not yet verified: an event log, whose digest the
// reader computes as it reads) or from Verified (its size and sha256
// matched the evidence before anything read it).
//
// A verified file of at most MaxHeldFileBytes is kept in memory (while
// the bundle holds less than MaxHeldBytes so), so that what a parser reads
// is the very bytes that were hashed. A larger one is kept as its open
// descriptor, read again from offset 0 by each Reader: its bytes were
// hashed, but a process that can write the bundle's files while verify
// runs could change them in place between the hash and the parse. That is
// outside what the gate defends (a bundle is hostile data, not a hostile
// process on the verifying machine); the parsers are bounded either way.
type File struct {
	rel    string
	size   int64
	sum    string // sha256 (hex) of a verified file; "" for OpenFile's
	id     string
	data   []byte   // a verified file kept in memory
	f      *os.File // else its descriptor
	b      *Bundle
	shared bool // the bundle's (Verified): Close leaves it open
}

// Path is the file's path relative to the bundle's root.
func (f *File) Path() string { return f.rel }

// Name is the file's base name.
func (f *File) Name() string { return path.Base(f.rel) }

// Size is the file's size as fstat gave it when it was opened; a reader
// never reads past it.
func (f *File) Size() int64 { return f.size }

// SHA256 is the verified file's sha256 (hex); "" for a file from OpenFile.
func (f *File) SHA256() string { return f.sum }

// ID identifies the file on its file system (device and inode): two paths
// with the same ID are one file.
func (f *File) ID() string { return f.id }

// Reader returns a new reader of the file's Size bytes, from the start.
// It reads and seeks independently of any other.
func (f *File) Reader() *io.SectionReader {
	if f.data != nil {
		return io.NewSectionReader(bytes.NewReader(f.data), 0, f.size)
	}
	return io.NewSectionReader(f.f, 0, f.size)
}

// Close closes a file from OpenFile. A file from Verified belongs to the
// bundle, which may hand it out again, and stays open until Bundle.Close.
func (f *File) Close() error {
	if f.shared || f.f == nil {
		return nil
	}
	f.b.mu.Lock()
	delete(f.b.open, f)
	f.b.mu.Unlock()
	return f.f.Close()
}

// OpenFile opens the file at rel (a slash-separated path relative to the
// evidence file's directory) through the gate, within the limit of its
// kind, and charges its size against the bundle's budgets. Nothing is
// compared with the evidence: a caller that reads it checks what it read
// (the event reader computes the log's sha256 and line count as it goes;
// checks reports a mismatch). Close it after reading; Bundle.Close closes
// what is left open.
func (b *Bundle) OpenFile(rel string, kind Kind) (*File, error) {
	fd, st, err := b.openRegular("open", rel, kind.limit())
	if err != nil {
		return nil, err
	}
	if err := b.charge(rel, kind, st.Size()); err != nil {
		fd.Close()
		return nil, err
	}
	f := &File{rel: rel, size: st.Size(), id: fileID(st, rel), f: fd, b: b}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		fd.Close()
		return nil, &Error{Op: "open", Path: rel, Err: ErrClosed}
	}
	b.open[f] = struct{}{}
	return f, nil
}

// Verified opens the witness file at rel through the gate and returns it
// once its size is size and its sha256 is sha256hex, as the evidence
// records them: a size that differs is refused from fstat, before a byte
// is read (ErrSize); a sha256 that differs is refused after hashing
// (ErrDigest). The *Error's Got says what the file holds. The file counts
// against MaxWitnessFileBytes and the bundle's budgets; a file verified
// once is handed out again without reading it again.
func (b *Bundle) Verified(rel string, size int64, sha256hex string) (*File, error) {
	// One verification at a time: a file asked for by two goroutines at
	// once is read and charged once, and the second gets the first's.
	b.verifying.Lock()
	defer b.verifying.Unlock()
	b.mu.Lock()
	if f, ok := b.verified[rel]; ok {
		b.mu.Unlock()
		if err := f.same(size, sha256hex); err != nil {
			return nil, err
		}
		return f, nil
	}
	b.mu.Unlock()
	fd, st, err := b.openRegular("verify", rel, MaxWitnessFileBytes)
	if err != nil {
		return nil, err
	}
	if st.Size() != size {
		fd.Close()
		return nil, &Error{Op: "verify", Path: rel, Err: ErrSize, Got: strconv.FormatInt(st.Size(), 10),
			Detail: fmt.Sprintf("it has %d bytes, the evidence records %d", st.Size(), size)}
	}
	if err := b.charge(rel, KindWitness, size); err != nil {
		fd.Close()
		return nil, err
	}
	f := &File{rel: rel, size: size, id: fileID(st, rel), b: b, shared: true}
	h := sha256.New()
	if b.hold(size) {
		f.data = make([]byte, size)
		_, err = io.ReadFull(fd, f.data)
		h.Write(f.data)
		fd.Close()
	} else {
		f.f = fd
		var n int64
		n, err = io.Copy(h, io.NewSectionReader(fd, 0, size))
		if err == nil && n != size {
			err = io.ErrUnexpectedEOF
		}
	}
	if err != nil {
		b.release(f)
		return nil, &Error{Op: "verify", Path: rel, Err: ErrChanged, Detail: "read: " + err.Error(), cause: err}
	}
	f.sum = hex.EncodeToString(h.Sum(nil))
	if f.sum != sha256hex {
		b.release(f)
		return nil, &Error{Op: "verify", Path: rel, Err: ErrDigest, Got: f.sum,
			Detail: "the file's sha256 is " + f.sum + ", the evidence records " + sha256hex}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		b.releaseLocked(f)
		return nil, &Error{Op: "verify", Path: rel, Err: ErrClosed}
	}
	b.verified[rel] = f
	if f.f != nil {
		b.open[f] = struct{}{}
	}
	return f, nil
}

// same compares a verified file with another claim about it.
func (f *File) same(size int64, sum string) error {
	switch {
	case f.size != size:
		return &Error{Op: "verify", Path: f.rel, Err: ErrSize, Got: strconv.FormatInt(f.size, 10),
			Detail: fmt.Sprintf("it has %d bytes, the evidence records %d", f.size, size)}
	case f.sum != sum:
		return &Error{Op: "verify", Path: f.rel, Err: ErrDigest, Got: f.sum,
			Detail: "the file's sha256 is " + f.sum + ", the evidence records " + sum}
	}
	return nil
}

// hold reserves room in memory for a verified file of size bytes.
func (b *Bundle) hold(size int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if size > MaxHeldFileBytes || b.held+size > MaxHeldBytes {
		return false
	}
	b.held += size
	return true
}

// release gives back what a file that was not verified held.
func (b *Bundle) release(f *File) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(f)
}

func (b *Bundle) releaseLocked(f *File) {
	if f.data != nil {
		b.held -= f.size
		f.data = nil
	}
	if f.f != nil {
		f.f.Close()
	}
}
