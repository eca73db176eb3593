package main

// The embedded broker of TestHostileBundles: `orderflow-audit broker`
// faces malformed frames, then a real client must still produce and
// consume on it.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// hostileFrames are the bad clients, each against a broker of its own: a
// Kafka frame is a 4-byte big-endian length, then a request header (api
// key, version, correlation id, client id).
var hostileFrames = []struct {
	name string
	b    []byte
}{
	{"20-malformed-bytes", []byte("\x00\x00\x00\x10\xff\xff\xff\xff\xde\xad\xbe\xef\x00\x00\x00\x00\xff\xff\xff\xff")},
	{"length-ffffffff", []byte("\xff\xff\xff\xff\x00\x12\x00\x03\x00\x00\x00\x01")},
	{"truncated-header", []byte("\x00\x00\x00\x20\x00\x12")},
}

// hostileBrokerFrame starts `broker`, sends it frame on a connection of
// its own (twice, on two connections), then a real client must produce
// and consume; the broker must not crash, nor grow by a GiB for a frame.
func hostileBrokerFrame(t *testing.T, frame []byte) {
	w := newHostileWorld(t)
	before := hostileSnapshot(w.root, w.tmp, w.bundle)
	cmd := exec.Command(binary(t), "broker", "--listen", "127.0.0.1:0", "--topic", "hostile")
	cmd.Env, cmd.Dir = w.env(), w.outside
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	w.must(err)
	w.must(cmd.Start())
	// exited is closed when the broker has exited, waitErr then set.
	exited := make(chan struct{})
	var waitErr error
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for n := 0; sc.Scan(); n++ {
			if n == 0 {
				first <- sc.Text()
			}
		}
		close(first)
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	var addr string
	select {
	case l := <-first:
		f := strings.Fields(l) // broker listening on ADDR (kfake ...)
		if len(f) < 4 || f[1] != "listening" {
			t.Fatalf("broker's first line %q; stderr %s", l, stderr.String())
		}
		addr = f[3]
	case <-time.After(30 * time.Second):
		t.Fatalf("broker did not start within 30 s; stderr %s", stderr.String())
	}
	pid := cmd.Process.Pid
	alive := func(what string) bool {
		t.Helper()
		select {
		case <-exited:
			t.Errorf("after %s the broker exited (%v); stderr: %s", what, waitErr, hostileTail(stderr.String(), 2500))
			return false
		default:
			return true
		}
	}

	for i := range 2 {
		what := fmt.Sprintf("the frame on connection %d", i+1)
		vmBefore := hostileProcKB(pid, "VmSize")
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Errorf("%s: dial %s: %v", what, addr, err)
			break
		}
		c.Write(frame)
		// A bad client's connection may stay open or close: either way
		// it must cost the broker nothing but itself.
		c.SetReadDeadline(time.Now().Add(time.Second))
		var one [1]byte
		c.Read(one[:])
		c.Close()
		time.Sleep(300 * time.Millisecond)
		if grew := hostileProcKB(pid, "VmSize") - vmBefore; grew > 1<<20 { // kB
			t.Errorf("after %s the broker's address space grew by %d MiB", what, grew>>10)
		}
		if hwm := hostileProcKB(pid, "VmHWM") << 10; hwm >= hostileMaxRSS {
			t.Errorf("after %s the broker's max RSS is %d MiB", what, hwm>>20)
		}
		if !alive(what) {
			break
		}
	}

	// The next client is served.
	if alive("the hostile frames") {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("hostile"),
			kgo.ConsumeTopics("hostile"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		w.must(err)
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after the hostile frames")}).FirstErr(); err != nil {
			t.Errorf("produce after the malformed frames: %v", err)
		} else {
			got := false
			for !got && ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				fs.EachRecord(func(r *kgo.Record) { got = got || string(r.Value) == "after the hostile frames" })
			}
			if !got {
				t.Errorf("consume after the malformed frames: nothing within 20 s")
			}
		}
		cl.Close()
	}

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Errorf("the broker did not stop within 10 s of SIGTERM")
	}
	for _, m := range panicMarks {
		if strings.Contains(stderr.String(), m) {
			t.Errorf("the broker crashed (%q): %s", m, hostileTail(stderr.String(), 2500))
			break
		}
	}
	for _, c := range hostileChanged(before, hostileSnapshot(w.root, w.tmp, w.bundle)) {
		t.Errorf("the broker changed %s", c)
	}
}
