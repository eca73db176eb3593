package broker

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readViaKfake is how ReadDataFS read a data directory before it decoded
// the batches itself, kept as the tests' oracle: the checked plan's
// files are written to tmp (every directory with Mkdir, every file with
// O_EXCL), served by a kfake cluster on a loopback port and read back
// with Read's client code. A warning kfake logs while loading is
// ErrDamaged, and so is a partition whose offsets differ from its
// snapshot.
func readViaKfake(ctx context.Context, fsys fs.FS, sel Selection, tmp string) (*Log, error) {
	plan, err := planDataFS(ctx, fsys, true, false)
	if err != nil {
		return nil, err
	}
	if err := plan.write(tmp); err != nil {
		return nil, err
	}
	warn := &warnings{}
	c, err := loadCluster(tmp, warn)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if w := warn.take(); len(w) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrDamaged, strings.Join(w, "; "))
	}
	// Batches were checked against MaxBatchBytes: the client need not
	// accept more (its default is 1 GiB).
	log, err := Read(ctx, c.ListenAddrs(), sel, kgo.MaxDecompressBatchBytes(MaxBatchBytes))
	if err != nil {
		return nil, err
	}
	if w := warn.take(); len(w) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrDamaged, strings.Join(w, "; "))
	}
	if err := checkSnapshots(plan.snaps, log); err != nil {
		return nil, err
	}
	return log, nil
}

// loadCluster starts a kfake cluster on the private copy in dir. kfake
// loads on this goroutine (its partitions in goroutines of its own, which
// planDataFS's checks keep from panicking); a panic here is recovered
// into ErrDamaged.
func loadCluster(dir string, warn *warnings) (c *kfake.Cluster, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("%w: kfake panicked loading the checked copy: %v", ErrDamaged, r)
		}
	}()
	c, err = kfake.NewCluster(kfake.DataDir(dir), kfake.NumBrokers(1), kfake.WithLogger(warn),
		// Reading must not expire anything, however old the evidence: ten
		// years (kfake turns these into time.Duration, so no larger).
		kfake.BrokerConfigs(map[string]string{
			"offsets.retention.minutes":           "5256000",
			"offsets.retention.check.interval.ms": "315360000000",
			"log.retention.ms":                    "-1",
		}))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	return c, nil
}

// checkSnapshots holds each partition read against the snapshot kfake
// wrote when it closed (partitions/<topic>-<n>/snapshot.json, as read from
// the evidence): a segment cut at a batch boundary loads without a
// warning, and kfake lowers the high watermark to what is left, so only
// the snapshot still shows the records that are gone.
func checkSnapshots(snaps map[string][]diskSnapshot, log *Log) error {
	for _, t := range log.TopicNames() {
		for _, p := range log.Topics[t] {
			if int(p.Partition) >= len(snaps[t]) {
				return fmt.Errorf("%w: partition %s/%d has no snapshot", ErrDamaged, t, p.Partition)
			}
			s := snaps[t][p.Partition]
			if s.HighWatermark != p.End || s.LogStartOffset != p.Start {
				return fmt.Errorf("%w: partition %s/%d holds [%d, %d); the broker's snapshot at close says [%d, %d)",
					ErrDamaged, t, p.Partition, p.Start, p.End, s.LogStartOffset, s.HighWatermark)
			}
		}
	}
	return nil
}

// warnings is a kfake.Logger that keeps warnings and errors.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) Logf(level kfake.LogLevel, msg string, args ...any) {
	if level > kfake.LogLevelWarn || level == kfake.LogLevelNone {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, fmt.Sprintf(msg, args...))
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.lines
	w.lines = nil
	return out
}

// write creates the plan's copy in dir, a directory this process just
// created: every directory with Mkdir and every file with O_EXCL, so no
// link or other file can be in the way of a write.
func (p *dataPlan) write(dir string) error {
	for _, d := range p.dirs {
		if err := os.Mkdir(filepath.Join(dir, filepath.FromSlash(d)), 0o700); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
	}
	for _, f := range p.files {
		if err := writeExcl(filepath.Join(dir, filepath.FromSlash(f.name)), f.data); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
	}
	return nil
}

func writeExcl(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
