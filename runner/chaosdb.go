package runner

import (
	"context"
	"fmt"
	"time"
)

// crashDBFunc returns the chaos scenario's database crash: SIGKILL to the
// private server and a restart on its data directory, with the watchdog
// held meanwhile (the server is down on purpose). nil without a private
// server: an external server or a container is not the run's to kill.
func (rs *runScope) crashDBFunc() func(context.Context) (string, error) {
	if rs.private == nil {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		release := rs.watch.hold()
		defer release()
		pid := rs.private.Pid()
		took, err := rs.private.Crash(ctx, rs.opts.Private)
		if err != nil {
			return "", err
		}
		// The run's pool reconnects by itself; wait until it does, so
		// that the watchdog finds the server well when it resumes.
		deadline := time.Now().Add(10 * time.Second)
		for rs.server.Probe(ctx) != nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		return fmt.Sprintf("SIGKILL to the private mariadbd (pid %d); started again on its data directory and port %d "+
			"in %v (InnoDB crash recovery), now pid %d", pid, rs.private.Port, took.Round(time.Millisecond), rs.private.Pid()), nil
	}
}
