package checks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Tampering with the clean U80 fixture. Every edit must make Verify fail
// with a reason that names what broke. Edits of event lines are tried two
// ways: naively (the log's recorded sha256 and line count no longer match)
// and by a forger who also rewrites the evidence's digests ("resealed"),
// so that the replay itself must notice.

// numberPaths walks a decoded JSON document and returns the JSON pointer of
// every number.
func numberPaths(doc any, at string, out *[]string) {
	switch x := doc.(type) {
	case map[string]any:
		for k, v := range x {
			numberPaths(v, at+"/"+k, out)
		}
	case []any:
		for i, v := range x {
			numberPaths(v, at+"/"+strconv.Itoa(i), out)
		}
	case json.Number:
		*out = append(*out, at)
	}
}

func decodeNumbers(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// setAt replaces the value at a JSON pointer.
func setAt(doc any, ptr string, f func(any) any) {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := doc
	for i, p := range parts {
		last := i == len(parts)-1
		switch x := cur.(type) {
		case map[string]any:
			if last {
				x[p] = f(x[p])
				return
			}
			cur = x[p]
		case []any:
			n, _ := strconv.Atoi(p)
			if last {
				x[n] = f(x[n])
				return
			}
			cur = x[n]
		}
	}
}

// numberRules says which rule must catch an edit of the number at a path.
// elapsed_ms and run.seed are not claims about what happened (how long a
// scenario took, which seed the run was given): no event records them, so
// the verifier cannot recompute them and they are left out.
var numberRules = []struct {
	re   *regexp.Regexp
	rule string
}{
	{regexp.MustCompile(`^/scenarios/\d+/logs/\d+/lines$`), "log-lines"},
	{regexp.MustCompile(`^/scenarios/\d+/invariants/\d+/rows$`), "invariant-mismatch"},
	{regexp.MustCompile(`^/scenarios/\d+/tables/\d+/rows$`), "table-digest"},
	{regexp.MustCompile(`^/summary/`), "summary-mismatch"},
	{regexp.MustCompile(`^(/scenarios/\d+/elapsed_ms|/run/seed)$`), ""},
	{regexp.MustCompile(`^/witness/(database|broker)/files/0/size$`), "witness-size"},
	// The other files of a witness go through the same loop as the first:
	// one stands for all (each edit serves the broker's directory anew).
	{regexp.MustCompile(`^/witness/(database|broker)/files/\d+/size$`), ""},
	{regexp.MustCompile(`^/witness/database/server_id$`), "witness-server"},
	// How many files the system under test's source digest covers is a
	// claim about the build, checked for its shape (at least one), not
	// recomputable from the evidence.
	{regexp.MustCompile(`^/environment/system_under_test/source/files$`), ""},
	{regexp.MustCompile(`^/witness/database/start_pos$`), "witness-gtid"},
	// A fault claimed to have fired or been skipped more or less often
	// than the events show.
	{regexp.MustCompile(`^/proof_claims/faults/\d+/(fired|skipped|missed)$`), "proof-mismatch"},
}

func TestTamperEvidenceNumbers(t *testing.T) {
	base := copyFixture(t, "u80")
	raw, _ := os.ReadFile(base)
	var paths []string
	numberPaths(decodeNumbers(t, raw), "", &paths)
	slices.Sort(paths)
	if len(paths) < 80 {
		t.Fatalf("only %d numbers found", len(paths))
	}
	for _, path := range paths {
		i := slices.IndexFunc(numberRules, func(r struct {
			re   *regexp.Regexp
			rule string
		}) bool {
			return r.re.MatchString(path)
		})
		if i < 0 {
			t.Errorf("%s: a number this test does not know; add its rule", path)
			continue
		}
		want := numberRules[i].rule
		if want == "" {
			continue
		}
		t.Run(path, func(t *testing.T) {
			p := copyFixture(t, "u80")
			doc := decodeNumbers(t, raw)
			setAt(doc, path, func(v any) any {
				n, _ := v.(json.Number).Int64()
				return n + 1
			})
			b, _ := json.Marshal(doc)
			os.WriteFile(p, b, 0o644)
			v := verify(t, p)
			if v.Status != Fail || !hasRule(v, want) {
				t.Fatalf("verdict %s %v; want FAIL with %s", v.Status, rules(v), want)
			}
		})
	}
}

// TestTamperEvidenceText edits claims written as text: metric values
// (numbers and words), the observation line, statuses and digests.
func TestTamperEvidenceText(t *testing.T) {
	base := copyFixture(t, "u80")
	raw, _ := os.ReadFile(base)
	doc := decodeNumbers(t, raw)
	type edit struct {
		path, to, rule string
	}
	var edits []edit
	for si, sc := range doc.(map[string]any)["scenarios"].([]any) {
		s := sc.(map[string]any)
		for mi, m := range s["metrics"].([]any) {
			val := m.(map[string]any)["value"].(string)
			to := map[string]string{"true": "false", "false": "true", "SENT": "CLAIMED", "unique": "none",
				"PENDING→CLAIMED→SENT": "PENDING→SENT"}[val]
			if n, err := strconv.Atoi(val); err == nil {
				to = strconv.Itoa(n + 1)
			}
			if to == "" {
				t.Errorf("metric value %q: no edit for it", val)
				continue
			}
			edits = append(edits, edit{fmt.Sprintf("/scenarios/%d/metrics/%d/value", si, mi), to, "metric-mismatch"})
		}
		line := s["line"].(string)
		if d := regexp.MustCompile(`=\d`).FindStringIndex(line); d != nil {
			edits = append(edits, edit{fmt.Sprintf("/scenarios/%d/line", si), line[:d[0]+1] + "7" + line[d[1]:], "line-mismatch"})
		}
		edits = append(edits,
			edit{fmt.Sprintf("/scenarios/%d/logs/0/sha256", si), strings.Repeat("ab", 32), "log-digest"},
			edit{fmt.Sprintf("/scenarios/%d/tables/4/sha256", si), strings.Repeat("cd", 32), "table-digest"},
		)
	}
	edits = append(edits, edit{"/boundaries/1/figures", "deliveries=1", "boundary-mismatch"},
		edit{"/boundaries/0/status", "FAIL", "boundary-mismatch"})
	for _, e := range edits {
		t.Run(e.path, func(t *testing.T) {
			p := copyFixture(t, "u80")
			d := decodeNumbers(t, raw)
			setAt(d, e.path, func(any) any { return e.to })
			b, _ := json.Marshal(d)
			os.WriteFile(p, b, 0o644)
			v := verify(t, p)
			if v.Status != Fail || !hasRule(v, e.rule) {
				t.Fatalf("verdict %s %v; want FAIL with %s", v.Status, rules(v), e.rule)
			}
		})
	}
	t.Run("status PASS to FAIL", func(t *testing.T) {
		p := copyFixture(t, "u80")
		ev := readEvidence(t, p)
		ev.Scenarios[2].Status, ev.Scenarios[2].Reason = "FAIL", "edited"
		writeEvidence(t, p, ev)
		v := verify(t, p)
		for _, want := range []string{"scenario-failed", "line-mismatch", "summary-mismatch", "boundary-mismatch"} {
			if !hasRule(v, want) {
				t.Errorf("rules %v lack %s", rules(v), want)
			}
		}
	})
}

type logLine struct {
	scenario, log string
	no            int // 1-based
	lines         []string
}

func fixtureLines(t *testing.T) []logLine {
	base := copyFixture(t, "u80")
	var out []logLine
	for _, sc := range readEvidence(t, base).Scenarios {
		for _, ref := range sc.Logs {
			lines := readLines(t, filepath.Join(filepath.Dir(base), ref.Path))
			for k := range lines {
				out = append(out, logLine{sc.ID, ref.Path, k + 1, lines})
			}
		}
	}
	return out
}

// tamperLine rewrites one log of a single-scenario copy of the fixture and
// verifies it.
func tamperLine(t *testing.T, sf *scenarioFixtures, l logLine, sealed bool, f func([]string) []string) *Verdict {
	t.Helper()
	p, ev := sf.copyScenario(t, l.scenario)
	writeLines(t, filepath.Join(filepath.Dir(p), l.log), f(slices.Clone(l.lines)))
	if sealed {
		resealFast(t, p, ev, l.log)
	}
	return verify(t, p)
}

// sample keeps every fourth line with -short; the full run tries every
// line.
func sample(ls []logLine) []logLine {
	if !testing.Short() {
		return ls
	}
	var out []logLine
	for i, l := range ls {
		if i%4 == 0 {
			out = append(out, l)
		}
	}
	return out
}

// undetectable lists the resealed line deletions that change no claim: the
// last event of a log that nothing else depends on (a consumer's final
// offset commit). A forger
// who rewrites a log and its recorded digest can drop such a trailing
// event; only the sha256 in the evidence (and whatever signs it) guards it.
var undetectable = map[string]string{
	"u80/normalChain/consumer-1.jsonl:7":         "offset_commit",
	"u80/sendBeforeMarkCrash/consumer-1.jsonl:7": "offset_commit",
	"u80/offsetReplay/consumer-2.jsonl:3":        "offset_commit",
	"u80/businessInvariants/consumer-1.jsonl:12": "offset_commit",
}

func TestTamperEventLines(t *testing.T) {
	sf := newScenarioFixtures(t)
	for _, l := range sample(fixtureLines(t)) {
		k := l.no - 1
		name := fmt.Sprintf("%s:%d", l.log, l.no)
		ops := []struct {
			op   string
			f    func([]string) []string
			rule string // when resealed
		}{
			{"delete", func(ls []string) []string { return slices.Delete(ls, k, k+1) }, "seq-gap"},
			{"duplicate", func(ls []string) []string { return slices.Insert(ls, k, ls[k]) }, "seq-order"},
		}
		if k+1 < len(l.lines) {
			ops = append(ops, struct {
				op   string
				f    func([]string) []string
				rule string
			}{"swap with next", func(ls []string) []string { ls[k], ls[k+1] = ls[k+1], ls[k]; return ls }, "seq-order"})
		}
		for _, o := range ops {
			t.Run(name+" "+o.op, func(t *testing.T) {
				if o.op == "delete" { // naively, any edit breaks the recorded digest
					if v := tamperLine(t, sf, l, false, o.f); v.Status != Fail || !hasRule(v, "log-digest") {
						t.Errorf("naive: verdict %s %v; want FAIL log-digest", v.Status, rules(v))
					}
				}
				v := tamperLine(t, sf, l, true, o.f)
				last := o.op == "delete" && l.no == len(l.lines)
				switch {
				case last && undetectable[name] != "":
					if !clean(v) {
						t.Logf("now detected (%v): remove %s from undetectable", rules(v), name)
					}
				case last:
					if v.Status != Fail {
						t.Errorf("resealed: verdict %s %v; want FAIL", v.Status, rules(v))
					}
				case v.Status != Fail || !hasRule(v, o.rule):
					t.Errorf("resealed: verdict %s %v; want FAIL %s", v.Status, rules(v), o.rule)
				}
			})
		}
	}
}

// TestTamperEventFields adds 1 to every number of every event and changes
// every event id, resealed, so that only the replay can notice. The edits
// no claim of the logs depends on: the HTTP status of a rolled-back
// request; a claim's lease_ms (the lease the relay says it is configured
// with), which the verifier holds to the claim's time only within the 5 s
// clock tolerance of lease-off-claim: a millisecond is below what it can
// see; a seed's price_cents (the binlog's stock row holds it: witness-write,
// but these single-scenario copies leave the witnesses out); a client
// request's HTTP status within its class (2xx stays 2xx: the replay reads
// the class) and the order it names when another order of the same lines
// and principal exists (the binlog's idempotency record of the key holds
// it: witness-answer, out of these copies too); and an order's top-level
// stock when it lists its lines (the stock left is each line's,
// lines[].stock, which the replay holds).
func TestTamperEventFields(t *testing.T) {
	sf := newScenarioFixtures(t)
	for _, l := range sample(fixtureLines(t)) {
		var ev map[string]any
		dec := json.NewDecoder(strings.NewReader(l.lines[l.no-1]))
		dec.UseNumber()
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(ev))
		for k := range ev {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, key := range keys {
			var to any
			switch x := ev[key].(type) {
			case json.Number:
				n, _ := x.Int64()
				to = n + 1
			case string:
				if key != "event_id" {
					continue
				}
				to = "e-99"
			default:
				continue
			}
			unchecked := map[string][]string{"order_rolled_back": {"status"}, "claim": {"lease_ms"}, "seed_stock": {"price_cents"},
				"order_request": {"status", "order_id"}}
			if slices.Contains(unchecked[fmt.Sprint(ev["kind"])], key) || (ev["kind"] == "order_committed" && key == "stock" && ev["lines"] != nil) {
				continue
			}
			t.Run(fmt.Sprintf("%s:%d %s", l.log, l.no, key), func(t *testing.T) {
				v := tamperLine(t, sf, l, true, func(ls []string) []string {
					e := map[string]any{}
					for k, v := range ev {
						e[k] = v
					}
					e[key] = to
					b, _ := json.Marshal(e)
					ls[l.no-1] = string(b) + "\n"
					return ls
				})
				if clean(v) {
					t.Errorf("%s %v -> %v went unnoticed", ev["kind"], ev[key], to)
				}
			})
		}
	}
}
