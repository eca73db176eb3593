package audit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/chaos"
)

// The pipeline's processes: one replica per (role, number), each started
// from the profile's command without a shell, in a process group of its
// own (so that a signal reaches whatever it started), killed by the kernel
// if the audit dies (Pdeathsig), its stdout and stderr appended to files of
// the bundle across restarts, and started again whenever it ends until the
// audit stops it. Only these processes are ever signalled.

// Bounds of the roles' lifecycle.
const (
	// restartDelay is the wait before a replica that ended is started
	// again (one that cannot start is not restarted in a tight loop).
	restartDelay = 150 * time.Millisecond
	// settleGrace is how long a replica without a readiness URL must stay
	// up to count as started.
	settleGrace = 700 * time.Millisecond
	// stopGrace is how long a replica has to end after SIGTERM before
	// its group gets SIGKILL.
	stopGrace = 5 * time.Second
)

// replica is one supervised process of a role.
type replica struct {
	role string
	n    int
	name string // "relay-1"
	argv []string
	// dir is the working directory of its processes: the profile's
	// directory, so that a relative command or file in a role resolves
	// as the profile's migrations do.
	dir   string
	env   []string
	ready string // readiness URL, expanded; empty: stay up settleGrace
	port  int
	link  *chaos.Link // its database link (proxy)
	// dbUser is its own account on the private server (roleUser), by
	// which conn-kill finds its connections; empty on your own server,
	// where the roles use the profile's account.
	dbUser string

	stdout, stderr *os.File

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the running incarnation ended
	starts   int
	stopping bool
	paused   bool
	// supervised: its supervise loop runs (started once every replica
	// was ready), and closes done when it ends.
	supervised bool
	lastExit   string
	done       chan struct{} // closed when the supervise loop ended
}

// roles are every replica of the profile, in a stable order (role name,
// then number).
type roles struct {
	list []*replica
	// client is the audit's own SQL load client as a fault target: its
	// database link only (ClientTarget), never a process; nil without a
	// SQL load.
	client *replica
}

// ClientTarget names the SQL load client in a schedule: latency and cuts
// on its database link ("client>database"), as on a role's.
const ClientTarget = "client"

// planRoles gives every replica its port and proxy and expands its
// command, environment and readiness URL. Nothing runs yet.
func planRoles(s *scope, base vars) (*roles, error) {
	names := make([]string, 0, len(s.opts.Profile.Roles))
	for name := range s.opts.Profile.Roles {
		names = append(names, name)
	}
	sort.Strings(names)
	rs := &roles{}
	ports := map[string]int{}
	for _, name := range names {
		def := s.opts.Profile.Roles[name]
		for i := 1; i <= def.Replicas; i++ {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			r := &replica{role: name, n: i, name: name + "-" + strconv.Itoa(i), port: port, done: make(chan struct{})}
			if r.link, err = s.proxies.Add(r.name+">database", s.cfg.Addr); err != nil {
				return nil, err
			}
			if i == 1 {
				ports[name] = port
			}
			rs.list = append(rs.list, r)
		}
	}
	if s.private != nil {
		for _, r := range rs.list {
			u, err := s.createRoleUser(r.name)
			if err != nil {
				return nil, err
			}
			r.dbUser = u
		}
	}
	for _, name := range names {
		base["role."+name] = "127.0.0.1:" + strconv.Itoa(ports[name])
		first := rs.find(name, 1)
		base["proxy."+name+".db"] = s.roleDSN(first.link.Addr, first.dbUser)
	}
	for _, r := range rs.list {
		def := s.opts.Profile.Roles[r.role]
		v := base.with("replica", strconv.Itoa(r.n), "port", strconv.Itoa(r.port), "listen", "127.0.0.1:"+strconv.Itoa(r.port),
			"proxy."+r.role+".db", s.roleDSN(r.link.Addr, r.dbUser))
		words, err := splitWords(def.Start)
		if err != nil {
			return nil, fmt.Errorf("%w: roles.%s.start: %v", ErrBadOptions, r.role, err)
		}
		for _, w := range words {
			x, err := v.expand("roles."+r.role+".start", w)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
			}
			r.argv = append(r.argv, x)
		}
		r.dir = s.opts.ProfileDir
		if r.argv[0] == "orderflow-audit" && s.opts.Exe != "" {
			r.argv[0] = s.opts.Exe // this very binary, not whichever PATH finds
		}
		keys := make([]string, 0, len(def.Env))
		for k := range def.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, err := v.expand("roles."+r.role+".env."+k, def.Env[k])
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
			}
			r.env = append(r.env, k+"="+x)
		}
		if def.Ready != "" {
			if r.ready, err = v.expand("roles."+r.role+".ready", def.Ready); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
			}
		}
		for _, f := range []struct {
			p    **os.File
			name string
		}{{&r.stdout, r.name + ".stdout"}, {&r.stderr, r.name + ".stderr"}} {
			if *f.p, err = os.OpenFile(filepath.Join(s.stage, rolesDir, f.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
				return nil, fmt.Errorf("capture the output of %s: %w", r.name, err)
			}
		}
	}
	return rs, nil
}

func (rs *roles) find(role string, n int) *replica {
	for _, r := range rs.list {
		if r.role == role && r.n == n {
			return r
		}
	}
	return nil
}

func (rs *roles) byName(name string) *replica {
	for _, r := range rs.list {
		if r.name == name {
			return r
		}
	}
	if rs.client != nil && name == ClientTarget {
		return rs.client
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a port for a role: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs one incarnation of r.
func (r *replica) start() error {
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Dir = r.dir // a relative argv[0] is evaluated relative to it
	cmd.Env = append(os.Environ(), r.env...)
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	r.mu.Lock()
	r.cmd, r.exited, r.paused = cmd, exited, false
	r.starts++
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		r.lastExit = exitText(cmd, err)
		r.mu.Unlock()
		close(exited)
	}()
	return nil
}

func exitText(cmd *exec.Cmd, err error) string {
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return "killed by " + st.Signal().String()
	}
	if err != nil && cmd.ProcessState == nil {
		return err.Error()
	}
	return "exit status " + strconv.Itoa(cmd.ProcessState.ExitCode())
}

// supervise starts r again whenever it ends, until stop.
func (r *replica) supervise() {
	defer close(r.done)
	for {
		r.mu.Lock()
		exited := r.exited
		r.mu.Unlock()
		<-exited
		time.Sleep(restartDelay)
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if stopping {
			return
		}
		if err := r.start(); err != nil {
			r.mu.Lock()
			r.lastExit = "cannot start: " + err.Error()
			r.exited = closedChan()
			r.mu.Unlock()
			time.Sleep(time.Second)
		}
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// signal sends sig to r's process group, if an incarnation runs.
func (r *replica) signal(sig syscall.Signal) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return false
	}
	select {
	case <-r.exited:
		return false
	default:
	}
	switch sig {
	case syscall.SIGSTOP:
		r.paused = true
	case syscall.SIGCONT:
		r.paused = false
	}
	return signalGroup(r.cmd.Process.Pid, sig) == nil
}

// running reports whether an incarnation of r runs now.
func (r *replica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exited == nil {
		return false
	}
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// ErrRoleStart: a role's process would not start or did not become ready
// within the bound (exit 3: the pipeline under audit is not there).
var ErrRoleStart = errors.New("a role would not start")

// startAll starts every replica and waits until each is ready: its
// readiness URL answers (any HTTP answer) or, without one, it stays up
// settleGrace. A replica that ends before, or is not ready within
// readyTimeout, is an error naming it, its exit and the end of its stderr.
func (rs *roles) startAll(ctx context.Context, readyTimeout time.Duration) error {
	for _, r := range rs.list {
		if err := r.start(); err != nil {
			return fmt.Errorf("%w: %s: %s: %v", ErrRoleStart, r.name, strings.Join(r.argv, " "), err)
		}
	}
	deadline := time.Now().Add(readyTimeout)
	for _, r := range rs.list {
		if err := r.waitReady(ctx, deadline); err != nil {
			return err
		}
	}
	for _, r := range rs.list { // ready, and still up once all are
		if !r.running() {
			return r.notReady("ended after it was ready")
		}
	}
	for _, r := range rs.list {
		r.mu.Lock()
		r.supervised = true
		r.mu.Unlock()
		go r.supervise()
	}
	return nil
}

func (r *replica) waitReady(ctx context.Context, deadline time.Time) error {
	hc := &http.Client{Timeout: time.Second}
	upSince := time.Now()
	for {
		select {
		case <-r.exited:
			return r.notReady("ended before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if r.ready == "" {
			if time.Since(upSince) >= settleGrace {
				return nil
			}
		} else if req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.ready, nil); err == nil {
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s was not ready within the bound (readiness %s); its stderr ends: %s",
				ErrRoleStart, r.name, orText(r.ready, "staying up"), tail(r.stderr.Name()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *replica) notReady(what string) error {
	r.mu.Lock()
	how := r.lastExit
	r.mu.Unlock()
	return fmt.Errorf("%w: %s %s (%s): %s; its stderr ends: %s", ErrRoleStart, r.name, what, how, strings.Join(r.argv, " "), tail(r.stderr.Name()))
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// tail returns the last lines of the file at path, on one line.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return "(nothing)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lines = lines[max(0, len(lines)-3):]
	return strings.Join(lines, " | ")
}

// stopAll stops every replica (stopProcesses) and closes the output
// files.
func (rs *roles) stopAll() {
	rs.stopProcesses()
	for _, r := range rs.list {
		r.stdout.Close()
		r.stderr.Close()
	}
}

// restartAll starts every replica again after stopProcesses, as startAll
// does, their output appended to the same files.
func (rs *roles) restartAll(ctx context.Context, readyTimeout time.Duration) error {
	for _, r := range rs.list {
		r.mu.Lock()
		r.stopping, r.supervised, r.done = false, false, make(chan struct{})
		r.mu.Unlock()
	}
	return rs.startAll(ctx, readyTimeout)
}

// stopProcesses stops every replica: no more restarts, SIGCONT (a paused
// one must be able to end), SIGTERM to its group, SIGKILL to the group
// after stopGrace; then waits for every supervise loop.
func (rs *roles) stopProcesses() {
	// A replica stopping already was stopped by an earlier call (and not
	// restarted since): its process group is gone, and its number may be
	// another's now.
	var stop []*replica
	for _, r := range rs.list {
		r.mu.Lock()
		if !r.stopping {
			r.stopping = true
			stop = append(stop, r)
		}
		r.mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, r := range stop {
		wg.Go(r.stop)
	}
	wg.Wait()
}

func (r *replica) stop() {
	r.mu.Lock()
	cmd, exited, supervised := r.cmd, r.exited, r.supervised
	r.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	pid := cmd.Process.Pid
	_ = signalGroup(pid, syscall.SIGCONT)
	_ = signalGroup(pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopGrace):
	}
	_ = signalGroup(pid, syscall.SIGKILL) // whatever it left in its group
	<-exited
	if !supervised {
		return
	}
	select {
	case <-r.done:
	case <-time.After(restartDelay + 2*time.Second):
	}
	// A restart that raced with stopping ran start after our read above.
	r.mu.Lock()
	cmd2, exited2 := r.cmd, r.exited
	r.mu.Unlock()
	if cmd2 != cmd {
		_ = signalGroup(cmd2.Process.Pid, syscall.SIGKILL)
		<-exited2
	}
}

// outputs lists the roles' output files of the bundle.
func (rs *roles) outputs(s *scope) ([]evidence.RoleOutput, error) {
	var out []evidence.RoleOutput
	for _, r := range rs.list {
		for _, stream := range []string{"stdout", "stderr"} {
			rel := rolesDir + "/" + r.name + "." + stream
			f, err := digestFile(filepath.Join(s.stage, filepath.FromSlash(rel)), s.base+"/"+rel)
			if err != nil {
				return nil, err
			}
			out = append(out, evidence.RoleOutput{Role: r.role, Replica: r.n, Stream: stream, File: f})
		}
	}
	return out, nil
}
