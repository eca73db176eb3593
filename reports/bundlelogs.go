package reports

import (
	"fmt"
	"io"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
)

// BundleLogs reads a bundle's event logs through its gate
// (evidence/bundle), as the verifier does: only regular files with one
// link beneath the bundle's root, through no symbolic link, within the
// gate's size limits. A log the gate refuses is not drawn; the verdict
// already names it.
type BundleLogs struct{ B *bundle.Bundle }

// Open implements LogSource.
func (l BundleLogs) Open(ref evidence.LogRef) (io.ReadCloser, error) {
	f, err := l.B.OpenFile(ref.Path, bundle.KindLog)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return gatedLog{Reader: f.Reader(), f: f}, nil
}

type gatedLog struct {
	io.Reader
	f *bundle.File
}

func (g gatedLog) Close() error { return g.f.Close() }
