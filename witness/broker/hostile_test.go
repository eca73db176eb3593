package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// seedDir is a small real data directory (one topic, one partition, one
// segment of one snappy batch), read at run time.
const seedDir = "../../checks/testdata/planted/mark-before-publish/u80/witness/kafka"

// seedTopic is the seed's one topic, found by its scenario's name (the
// run id in it changes when the fixtures are regenerated).
var seedTopic = func() string {
	dirs, _ := filepath.Glob(filepath.Join(seedDir, "partitions", "ofa.*.businessInvariants-0"))
	if len(dirs) != 1 {
		return "ofa.missing.businessInvariants"
	}
	return strings.TrimSuffix(filepath.Base(dirs[0]), "-0")
}()

var seedPart = "partitions/" + seedTopic + "-0"

// loadSeed reads seedDir into a MapFS, which tests then damage.
func loadSeed(t testing.TB) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(seedDir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join(seedDir, filepath.FromSlash(p)))
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if m[seedPart+"/0.dat"] == nil {
		t.Fatalf("%s has no %s/0.dat", seedDir, seedPart)
	}
	return m
}

// withBatch replaces the seed segment by one batch: the seed's first
// batch header with attrs, numRecords and records, its length and CRC
// made right again, so that only what the case changes is wrong.
func withBatch(m fstest.MapFS, attrs uint16, numRecords int32, records []byte) {
	seg := m[seedPart+"/0.dat"].Data
	b := append(append([]byte{}, seg[:batchHeader]...), records...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint32(b[57:], uint32(numRecords))
	fixCRC(b)
	m[seedPart+"/0.dat"] = &fstest.MapFile{Data: b}
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32c))
}

// groupEntry frames one groups.log entry the way kfake does.
func groupEntry(length uint32, body string) []byte {
	data := append([]byte{1, 0}, body...)
	out := binary.LittleEndian.AppendUint32(nil, length)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(data, crc32c))
	return append(out, data...)
}

// bigFS serves m, except that name claims size bytes.
type bigFS struct {
	fstest.MapFS
	name string
	size int64
}

func (b bigFS) Open(name string) (fs.File, error) {
	f, err := b.MapFS.Open(name)
	if err != nil || name != b.name {
		return f, err
	}
	return bigFile{f, b.size}, nil
}

type bigFile struct {
	fs.File
	size int64
}

func (b bigFile) Stat() (fs.FileInfo, error) {
	st, err := b.File.Stat()
	return bigInfo{st, b.size}, err
}

type bigInfo struct {
	fs.FileInfo
	size int64
}

func (b bigInfo) Size() int64 { return b.size }

// panicFS panics opening name.
type panicFS struct {
	fstest.MapFS
	name string
}

func (p panicFS) Open(name string) (fs.File, error) {
	if name == p.name {
		panic("hostile file system")
	}
	return p.MapFS.Open(name)
}

// TestReadDataFSHostile damages the seed directory one way per case: each
// is refused, fast, with the sentinel and the file named.
func TestReadDataFSHostile(t *testing.T) {
	snappyHuge := binary.AppendUvarint(nil, 1<<32-1) // a snappy block declaring 4 GiB
	cases := []struct {
		name   string
		damage func(m fstest.MapFS) fs.FS
		want   error
		file   string // named in the error
	}{
		{"50 million partitions", func(m fstest.MapFS) fs.FS {
			m["topics.json"].Data = []byte(strings.Replace(string(m["topics.json"].Data), `"partitions":1`, `"partitions":50000000`, 1))
			return m
		}, ErrLimit, "topics.json"},
		{"topic ../../../../evil", func(m fstest.MapFS) fs.FS {
			m["topics.json"].Data = []byte(`{"version":1,"topics":[{"name":"../../../../evil","id":"CZbxv9fIxdKGCjYHXIOLhg==","partitions":1,"replicas":1}]}`)
			return m
		}, ErrDamaged, "not a legal Kafka topic name"},
		{"topic ..", func(m fstest.MapFS) fs.FS {
			m["topics.json"].Data = []byte(`{"version":1,"topics":[{"name":"..","id":"CZbxv9fIxdKGCjYHXIOLhg==","partitions":1,"replicas":1}]}`)
			return m
		}, ErrDamaged, "topics.json"},
		{"too many topics", func(m fstest.MapFS) fs.FS {
			var b strings.Builder
			b.WriteString(`{"version":1,"topics":[`)
			for i := range MaxTopics + 1 {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"name":"t%d","id":"CZbxv9fIxdKGCjYHXIOLhg==","partitions":1,"replicas":1}`, i)
			}
			b.WriteString("]}")
			m["topics.json"].Data = []byte(b.String())
			return m
		}, ErrLimit, "topics.json"},
		{"unknown top-level file", func(m fstest.MapFS) fs.FS {
			m["evil.sh"] = &fstest.MapFile{Data: []byte("rm -rf ~")}
			return m
		}, ErrDamaged, "evil.sh"},
		{"partition kfake does not list", func(m fstest.MapFS) fs.FS {
			m["partitions/other-0/snapshot.json"] = &fstest.MapFile{Data: []byte("{}")}
			return m
		}, ErrDamaged, "partitions/other-0"},
		{"partition directory missing", func(m fstest.MapFS) fs.FS {
			for k := range m {
				if strings.HasPrefix(k, seedPart) {
					delete(m, k)
				}
			}
			return m
		}, ErrDamaged, "partitions"},
		{"symbolic link", func(m fstest.MapFS) fs.FS {
			m[seedPart+"/1.dat"] = &fstest.MapFile{Data: []byte("/home/user/.bashrc"), Mode: fs.ModeSymlink}
			return m
		}, ErrDamaged, seedPart + "/1.dat"},
		{"batch declares 1 GiB", func(m fstest.MapFS) fs.FS {
			b := bytes.Clone(m[seedPart+"/0.dat"].Data)
			binary.BigEndian.PutUint32(b[8:], 1<<30)
			m[seedPart+"/0.dat"].Data = b
			return m
		}, ErrDamaged, "0.dat"},
		{"batch declares 2^31-1 records", func(m fstest.MapFS) fs.FS {
			withBatch(m, 0, 1<<31-1, []byte{0})
			return m
		}, ErrDamaged, "0.dat"},
		{"batch declares more records than it holds", func(m fstest.MapFS) fs.FS {
			withBatch(m, 0, 0, []byte{2, 0}) // one record of one byte, zero declared
			return m
		}, ErrDamaged, "declares 0 records and holds 1"},
		{"snappy batch declares 4 GiB", func(m fstest.MapFS) fs.FS {
			withBatch(m, codecSnappy, 1, snappyHuge)
			return m
		}, ErrLimit, "0.dat"},
		{"gzip batch", func(m fstest.MapFS) fs.FS {
			withBatch(m, 1, 1, []byte{0x1f, 0x8b})
			return m
		}, ErrDamaged, "codec 1"},
		{"segment cut inside a batch", func(m fstest.MapFS) fs.FS {
			d := m[seedPart+"/0.dat"].Data
			m[seedPart+"/0.dat"].Data = d[:len(d)-5]
			return m
		}, ErrDamaged, "0.dat"},
		{"index of another size", func(m fstest.MapFS) fs.FS {
			m[seedPart+"/0.idx"].Data = append(bytes.Clone(m[seedPart+"/0.idx"].Data), m[seedPart+"/0.idx"].Data...)
			return m
		}, ErrDamaged, "0.idx"},
		{"segment file over MaxFileBytes", func(m fstest.MapFS) fs.FS {
			return bigFS{m, seedPart + "/0.dat", 1 << 40}
		}, ErrLimit, "0.dat"},
		{"snapshot high watermark past the segment", func(m fstest.MapFS) fs.FS {
			s := string(m[seedPart+"/snapshot.json"].Data)
			m[seedPart+"/snapshot.json"].Data = []byte(strings.Replace(s, `"high_watermark":`, `"high_watermark":1`, 1))
			return m
		}, ErrDamaged, "snapshot.json"},
		{"snapshot missing", func(m fstest.MapFS) fs.FS {
			delete(m, seedPart+"/snapshot.json")
			return m
		}, ErrDamaged, "snapshot.json"},
		{"groups.log entry declares 4 GiB", func(m fstest.MapFS) fs.FS {
			m["groups.log"].Data = append(bytes.Clone(m["groups.log"].Data), groupEntry(1<<32-1, `{}`)...)
			return m
		}, ErrDamaged, "groups.log"},
		{"groups.log entry of an unknown type", func(m fstest.MapFS) fs.FS {
			m["groups.log"].Data = append(bytes.Clone(m["groups.log"].Data),
				groupEntry(2+uint32(len(`{"type":"boom","g":"x"}`)), `{"type":"boom","g":"x"}`)...)
			return m
		}, ErrDamaged, "unknown entry type"},
		{"withheld file not JSON", func(m fstest.MapFS) fs.FS {
			m["sasl.json"].Data = []byte("{")
			return m
		}, ErrDamaged, "sasl.json"},
		{"no meta.json", func(m fstest.MapFS) fs.FS {
			delete(m, "meta.json")
			return m
		}, ErrNotDataDir, "meta.json"},
		{"panic in the file system", func(m fstest.MapFS) fs.FS {
			return panicFS{m, "topics.json"}
		}, ErrDamaged, "topics.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := c.damage(loadSeed(t))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := ReadDataFS(t.Context(), fsys, Selection{})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.file) {
				t.Fatalf("ReadDataFS = %v; want %v naming %s", err, c.want, c.file)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 {
				t.Errorf("allocated %d MB refusing it", a>>20)
			}
			if _, opened := OpenDataFS(t.Context(), c.damage(loadSeed(t)), Selection{}); opened == nil || opened.Error() != err.Error() {
				t.Errorf("OpenDataFS = %v; want ReadDataFS's %v", opened, err)
			}
			t.Log(err)
		})
	}
}

// TestReadDataFSSeed reads the undamaged seed: the checks accept a real
// directory, the log holds its records, and nothing is written (no
// private copy, no broker: TMPDIR stays empty).
func TestReadDataFSSeed(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	log, err := ReadDataFS(t.Context(), loadSeed(t), Selection{})
	if err != nil {
		t.Fatalf("ReadDataFS(seed) = %v", err)
	}
	if p, ok := log.Partition(seedTopic, 0); !ok || p.End == 0 || len(p.Records) == 0 {
		t.Errorf("seed partition = %+v, %v; want records", p, ok)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("the read wrote to TMPDIR: %v", ents)
	}
}

// TestReadDataFSCancel: a read whose context has ended fails with the
// context's error.
func TestReadDataFSCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := ReadDataFS(ctx, loadSeed(t), Selection{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadDataFS = %v; want context.Canceled", err)
	}
}

// copySeedDir writes the seed to a directory on disk.
func copySeedDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kafka")
	if err := os.CopyFS(dir, os.DirFS(seedDir)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readWithin runs ReadDataDir, failing the test if it does not return in
// time (a FIFO must be refused, not waited on).
func readWithin(t *testing.T, dir string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := ReadDataDir(t.Context(), dir, Selection{})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("ReadDataDir(%s) still running after 20s", dir)
		return nil
	}
}

// TestReadDataDirLinks: a segment that is a symbolic link (absolute, or
// relative and staying inside the bundle) is refused, and what it points
// to is untouched. Before, the copy kept the link and kfake's repair of
// the "segment" truncated its target.
func TestReadDataDirLinks(t *testing.T) {
	for _, relative := range []bool{false, true} {
		t.Run(fmt.Sprintf("relative=%v", relative), func(t *testing.T) {
			dir := copySeedDir(t)
			seg := filepath.Join(dir, filepath.FromSlash(seedPart), "0.dat")
			good, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(filepath.Dir(dir), "bashrc")
			want := append(bytes.Clone(good), "export PATH=$HOME/bin:$PATH\n"...)
			if err := os.WriteFile(victim, want, 0o600); err != nil {
				t.Fatal(err)
			}
			target := victim
			if relative {
				target, _ = filepath.Rel(filepath.Dir(seg), victim)
			}
			if err := os.Remove(seg); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, seg); err != nil {
				t.Fatal(err)
			}
			err = readWithin(t, dir)
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "0.dat") {
				t.Errorf("ReadDataDir = %v; want ErrDamaged naming 0.dat", err)
			}
			if got, _ := os.ReadFile(victim); !bytes.Equal(got, want) {
				t.Errorf("the link's target changed: %d bytes, was %d", len(got), len(want))
			}
		})
	}
}

// TestReadDataDirFIFO: a snapshot that is a FIFO, or a topic whose
// snapshot path would lead out of partitions/ to one, is refused at once.
func TestReadDataDirFIFO(t *testing.T) {
	t.Run("snapshot", func(t *testing.T) {
		dir := copySeedDir(t)
		snap := filepath.Join(dir, filepath.FromSlash(seedPart), "snapshot.json")
		if err := os.Remove(snap); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(snap, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		if err := readWithin(t, dir); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "snapshot.json") {
			t.Errorf("ReadDataDir = %v; want ErrDamaged naming snapshot.json", err)
		}
	})
	t.Run("topic ../../evil", func(t *testing.T) {
		// partitions/../../evil-0/snapshot.json is beside the data
		// directory, where a bundle can put anything.
		dir := copySeedDir(t)
		topics := `{"version":1,"topics":[{"name":"../../evil","id":"CZbxv9fIxdKGCjYHXIOLhg==","partitions":1,"replicas":1}]}`
		if err := os.WriteFile(filepath.Join(dir, "topics.json"), []byte(topics), 0o644); err != nil {
			t.Fatal(err)
		}
		evil := filepath.Join(filepath.Dir(dir), "evil-0")
		if err := os.Mkdir(evil, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(evil, "snapshot.json"), 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		err := readWithin(t, dir)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "topics.json") {
			t.Errorf("ReadDataDir = %v; want ErrDamaged naming topics.json", err)
		}
	})
}

// FuzzReadDataFS replaces one file of the seed directory (by index in
// name order, or a new name) with fuzzed bytes. Whatever the bytes, the
// checks must not panic or exceed their limits; whatever the reader
// accepts, kfake must load without a warning and a client read back to
// the same log (readViaKfake, the oracle); the reader may refuse, as
// damaged, only a record it cannot parse, where a client would stop
// short and serve less.
func FuzzReadDataFS(f *testing.F) {
	seed := loadSeed(f)
	names := seedNames(seed)
	for i, n := range names {
		f.Add(uint8(i), seed[n].Data)
	}
	f.Add(uint8(255), []byte("{}"))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		m := loadSeed(t)
		name := "partitions/x-0/0.dat"
		if int(which) < len(names) {
			name = names[which]
		}
		m[name] = &fstest.MapFile{Data: data}
		p, err := planDataFS(t.Context(), m, true, false)
		if err != nil {
			if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrLimit) && !errors.Is(err, ErrNotDataDir) {
				t.Fatalf("planDataFS = %v; want a sentinel", err)
			}
			return
		}
		var size int64
		for _, f := range p.files {
			size += int64(len(f.data))
		}
		if size > MaxDataBytes {
			t.Fatalf("the copy holds %d bytes", size)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		got, err := ReadDataFS(ctx, m, Selection{})
		if _, oerr := OpenDataFS(ctx, m, Selection{}); (oerr == nil) != (err == nil) {
			t.Fatalf("%s: ReadDataFS: %v, OpenDataFS: %v", name, err, oerr)
		}
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("%s accepted by the checks, then: %v", name, err)
			}
			return
		}
		if opened := openAsRead(t, m, Selection{}); !reflect.DeepEqual(opened, got) {
			t.Fatalf("%s: OpenDataFS and ReadDataFS disagree:\n%+v\n%+v", name, opened, got)
		}
		want, err := readViaKfake(ctx, m, Selection{}, t.TempDir())
		if err != nil {
			t.Fatalf("%s: the reader accepted it, kfake: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the reader and kfake disagree:\n%+v\n%+v", name, got, want)
		}
	})
}

func seedNames(m fstest.MapFS) []string { return slices.Sorted(maps.Keys(m)) }
