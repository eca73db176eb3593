package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// The load client: our own, the only input of the verdict that is not a
// witness. It sends the profile's templated request Requests times, spread
// evenly over the load phase by Concurrency workers, each with its own
// idempotency key ({{key}}: <run>-<n>) and correlation token ({{token}}),
// and records what it learned of each, as Jepsen's client does:
//
//	ok       a 2xx answer
//	fail     a 4xx answer, or a connection refused (nothing was sent)
//	unknown  a 5xx answer, a timeout, a connection lost: the server may
//	         or may not have committed; the binlog settles it
//
// A 5xx is unknown rather than failed: a service whose commit ack was lost
// cannot know whether its transaction committed, whatever it answers.

// Defaults of the load.
const (
	DefaultRequestsPerSecond = 15
	DefaultConcurrency       = 4
	requestTimeout           = 5 * time.Second
	maxAnswerBytes           = 1 << 20
)

// loadPlan is the profile's load, with the numbers chosen.
type loadPlan struct {
	spec        *profile.LoadSpec
	vars        vars
	requests    int
	concurrency int
	sql         *sqlLoad // the statements, when the load is SQL (loadsql.go)
}

func newLoadPlan(spec *profile.LoadSpec, v vars, d time.Duration) (*loadPlan, error) {
	lp := &loadPlan{spec: spec, vars: v, requests: spec.Requests, concurrency: spec.Concurrency}
	if lp.requests == 0 {
		lp.requests = max(1, int(d.Seconds()*DefaultRequestsPerSecond))
	}
	if lp.concurrency == 0 {
		lp.concurrency = DefaultConcurrency
	}
	if spec.SQL != nil {
		var err error
		if lp.sql, err = newSQLLoad(spec.SQL, v["dsn"], lp.concurrency); err != nil {
			return nil, err
		}
	}
	// Render request 1 now: a bad template is refused before anything runs.
	if _, err := lp.render(1); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
	}
	return lp, nil
}

// rendered is one request, ready to send.
type rendered struct {
	n           int
	key, token  string
	method, url string
	headers     map[string]string
	body        string
	args        [][]any // per statement, when the load is SQL
}

func (lp *loadPlan) render(n int) (rendered, error) {
	key := lp.vars["run"] + "-" + strconv.Itoa(n)
	v := lp.vars.with("n", strconv.Itoa(n), "key", key)
	token, err := v.expand("load.token", lp.spec.Token)
	if err != nil {
		return rendered{}, err
	}
	v = v.with("token", token)
	if lp.sql != nil {
		r := rendered{n: n, key: key, token: token}
		r.args, err = lp.sql.bind(v)
		return r, err
	}
	r := rendered{n: n, key: key, token: token, method: lp.spec.HTTP.Method, headers: map[string]string{}}
	if r.url, err = v.expand("load.http.url", lp.spec.HTTP.URL); err != nil {
		return rendered{}, err
	}
	if r.body, err = v.expand("load.http.body", lp.spec.HTTP.Body); err != nil {
		return rendered{}, err
	}
	for k, h := range lp.spec.HTTP.Headers {
		if r.headers[k], err = v.expand("load.http.headers."+k, h); err != nil {
			return rendered{}, err
		}
	}
	return r, nil
}

// client sends the requests and keeps the history.
type client struct {
	hc *http.Client

	mu      sync.Mutex
	history []evidence.ClientRequest
	counts  map[evidence.ClientOutcome]int
}

func newClient() *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &client{hc: &http.Client{Timeout: requestTimeout, Transport: tr}, counts: map[evidence.ClientOutcome]int{}}
}

// run sends lp's requests over d, or until ctx ends (the requests not
// sent by then are not in the history).
func (c *client) run(ctx context.Context, lp *loadPlan, d time.Duration) {
	todo := make(chan int)
	var wg sync.WaitGroup
	for range lp.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range todo {
				c.send(ctx, lp, n)
			}
		}()
	}
	start := time.Now()
	gap := d / time.Duration(lp.requests)
	for n := 1; n <= lp.requests; n++ {
		if wait := time.Until(start.Add(time.Duration(n-1) * gap)); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case todo <- n:
		case <-ctx.Done():
		}
	}
	close(todo)
	wg.Wait()
	c.hc.CloseIdleConnections()
	if lp.sql != nil {
		lp.sql.db.Close()
	}
}

func (c *client) send(ctx context.Context, lp *loadPlan, n int) {
	r, _ := lp.render(n) // rendered once in newLoadPlan: the templates are good
	rec := evidence.ClientRequest{N: n, Token: r.token, Key: r.key, Start: time.Now().UTC()}
	if lp.sql != nil {
		rec.Outcome = lp.sql.exec(r.args)
		rec.End = time.Now().UTC()
		c.record(rec)
		return
	}
	// wrote is set once any attempt wrote the request: net/http retries a
	// request with an Idempotency-Key on a new connection when a reused
	// one breaks, so the last attempt's "connection refused" does not
	// prove that nothing was sent (a first attempt may have committed).
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.WithoutCancel(ctx), trace),
		r.method, r.url, bytes.NewReader([]byte(r.body)))
	if err == nil {
		for k, v := range r.headers {
			req.Header.Set(k, v)
		}
		var resp *http.Response
		if resp, err = c.hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
			resp.Body.Close()
			rec.Status = resp.StatusCode
		}
	}
	rec.End = time.Now().UTC()
	switch {
	case err == nil && rec.Status >= 200 && rec.Status < 300:
		rec.Outcome = evidence.ClientOK
	case err == nil && rec.Status >= 400 && rec.Status < 500:
		rec.Outcome = evidence.ClientFailed
	case err != nil && errors.Is(err, syscall.ECONNREFUSED) && !wrote.Load():
		rec.Outcome = evidence.ClientFailed // refused, and no attempt was sent
	default:
		rec.Outcome = evidence.ClientUnknown
	}
	c.record(rec)
}

func (c *client) record(rec evidence.ClientRequest) {
	c.mu.Lock()
	c.history = append(c.history, rec)
	c.counts[rec.Outcome]++
	c.mu.Unlock()
}

// write writes the history, by request number, as JSONL at path.
func (c *client) write(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	sort.Slice(c.history, func(i, j int) bool { return c.history[i].N < c.history[j].N })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range c.history {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
