package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
)

// maxClientLine bounds one line of the client's history: a request is a
// few hundred bytes.
const maxClientLine = 64 << 10

// client reads the load client's history: one request per line, each
// decoded strictly, as many as the evidence says. A history that does not
// read is a problem, and the answer rule then has nothing to check.
func (r *reader) client() {
	c := r.out.Evidence.Client
	if c.File == nil {
		return
	}
	if !r.place("client", *c.File, r.base) {
		return
	}
	f := r.verified("client", "client history", *c.File)
	if f == nil {
		return
	}
	reqs, err := readClient(f)
	if err != nil {
		r.problem(Problem{Rule: "client-damaged", Path: c.File.Path, Message: "the client history cannot be read: " + err.Error()})
		return
	}
	if c.Requests != nil && int64(len(reqs)) != *c.Requests {
		r.problem(Problem{Rule: "client-count", Path: c.File.Path, Field: "requests", Claimed: fmt.Sprint(*c.Requests), Recomputed: fmt.Sprint(len(reqs)),
			Message: fmt.Sprintf("the client history holds %d request(s); the evidence says %d", len(reqs), *c.Requests)})
	}
	if reqs == nil {
		reqs = []evidence.ClientRequest{}
	}
	r.out.Client = reqs
}

func readClient(f *bundle.File) ([]evidence.ClientRequest, error) {
	sc := bufio.NewScanner(f.Reader())
	sc.Buffer(make([]byte, 0, 4096), maxClientLine)
	var out []evidence.ClientRequest
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var req evidence.ClientRequest
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("line %d: more than one JSON value", line)
		}
		switch req.Outcome {
		case evidence.ClientOK, evidence.ClientFailed, evidence.ClientUnknown:
		default:
			return nil, fmt.Errorf("line %d: outcome %q, want ok, fail or unknown", line, req.Outcome)
		}
		out = append(out, req)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d is longer than %d bytes", line+1, maxClientLine)
		}
		return nil, err
	}
	return out, nil
}

// outputs verifies the roles' captured output: never parsed (what the
// pipeline says of itself is no basis of the verdict), but a file of the
// bundle changed after the run is a fault of the bundle all the same.
func (r *reader) outputs() {
	for _, o := range r.out.Evidence.Roles {
		if r.place("output", o.File, r.base) {
			r.verified("output", fmt.Sprintf("%s %d %s output", o.Role, o.Replica, o.Stream), o.File)
		}
	}
	if n := r.out.Evidence.Nemesis; n != nil && r.place("nemesis", n.File, r.base) {
		r.verified("nemesis", "nemesis log", n.File)
	}
}

// unlisted reports what lies beneath the bundle's directory that the
// evidence does not list, or that is neither a directory nor a regular
// file: a reader of a witness directory would take it for part of the
// witness, and a file nobody vouches for has no place in a bundle.
func (r *reader) unlisted() {
	listed := map[string]bool{}
	for _, f := range r.out.Evidence.Files() {
		listed[f.Path] = true
	}
	l, err := r.b.List(r.base)
	switch {
	case errors.Is(err, bundle.ErrMissing):
		return // every listed file is reported missing already
	case err != nil:
		r.problem(Problem{Rule: "bundle-path", Path: r.base, Message: "the bundle's directory cannot be listed: " + err.Error()})
		return
	}
	for _, err := range l.Refused {
		var be *bundle.Error
		where := r.base
		if errors.As(err, &be) {
			if listed[be.Path] {
				continue // refused when it was verified
			}
			where = be.Path
		}
		r.problem(Problem{Rule: r.unlistedRule(where), Path: where, Message: "the bundle holds what the verifier does not read: " + err.Error()})
	}
	for _, rel := range l.Files {
		if !listed[rel] {
			r.problem(Problem{Rule: r.unlistedRule(rel), Path: rel,
				Message: "the bundle holds " + rel + ", which the evidence does not list"})
		}
	}
}

// unlistedRule is witness-unlisted inside a witness's directory (as for
// the reference's bundles), bundle-unlisted elsewhere.
func (r *reader) unlistedRule(rel string) string {
	if strings.HasPrefix(rel, r.base+"/witness/") {
		return "witness-unlisted"
	}
	return "bundle-unlisted"
}
