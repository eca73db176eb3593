package mariadbd

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Crash kills the server with SIGKILL, as a crash would, and starts it
// again on the same data directory, port and flags, waiting until root can
// log in again (InnoDB's crash recovery runs meanwhile). cfg is the Config
// the server was started with. It returns how long the restart took. On an
// error the server is not running; Remove still cleans up.
func (s *Server) Crash(ctx context.Context, cfg Config) (time.Duration, error) {
	s.mu.Lock()
	removed := s.removed
	s.mu.Unlock()
	if removed || s.cmd == nil {
		return 0, errors.New("crash the private server: it is not running")
	}
	cfg.setDefaults()
	s.kill()
	t0 := time.Now()
	if err := s.run(ctx, cfg, s.Port); err != nil {
		return time.Since(t0), fmt.Errorf("restart the private server after a crash: %w", err)
	}
	return time.Since(t0), nil
}
