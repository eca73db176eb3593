package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
)

// keptPrefix names a container kept with --keep: the user's from then on,
// never swept.
const keptPrefix = "ofa-kept-"

// ownerLabel is the LabelOwner value of this process: host, pid and the
// process's start time (a reused pid has another).
func ownerLabel() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return fmt.Sprintf("%s %d %s", host, pid, mariadbd.ProcStart(pid))
}

// abandoned tells whether a container labelled owner was started by a
// process on this host that is gone.
func abandoned(owner string) bool {
	f := strings.Fields(owner)
	if len(f) < 2 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(f[1])
	if f[0] != host || err != nil {
		return false
	}
	start := ""
	if len(f) > 2 {
		start = f[2]
	}
	return !mariadbd.Alive(pid, start)
}

// sweep removes the containers that runs on this host killed outright
// (SIGKILL, a second Ctrl-C) left behind: labelled LabelOwner with a
// process that is gone, and not kept. Errors are logged, not returned: a
// leftover is not this run's failure.
func (e *engine) sweep(ctx context.Context, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	res, err := e.cli.ContainerList(sctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", LabelOwner)})
	if err != nil {
		log.Debug("list containers of earlier runs", "err", err)
		return
	}
	for _, c := range res.Items {
		if kept(c.Names) || !abandoned(c.Labels[LabelOwner]) {
			continue
		}
		rctx, rcancel := context.WithTimeout(ctx, terminateTimeout)
		_, err := e.cli.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		rcancel()
		log.Info("removed a container left by a run that was killed", "container", short(c.ID), "run", c.Labels[LabelRun], "err", err)
	}
}

// labelStart carries a token of one start, so that a container the engine
// created after its start was given up on can be found and removed.
const labelStart = "org.orderflow-audit.start"

// startToken is a fresh value for labelStart.
func startToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// removeStray removes the containers labelled with the start token, over
// about a second: the engine may finish a create its client abandoned a
// moment after the client returned.
func (e *engine) removeStray(ctx context.Context, token string) {
	for i := 0; i < 5; i++ {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		lctx, cancel := context.WithTimeout(ctx, engineTimeout)
		res, err := e.cli.ContainerList(lctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", labelStart+"="+token)})
		cancel()
		if err != nil {
			continue
		}
		for _, c := range res.Items {
			rctx, rcancel := context.WithTimeout(ctx, terminateTimeout)
			_, _ = e.cli.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			rcancel()
		}
	}
}

func kept(names []string) bool {
	for _, n := range names {
		if strings.HasPrefix(strings.TrimPrefix(n, "/"), keptPrefix) {
			return true
		}
	}
	return false
}
