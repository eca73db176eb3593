package crosscheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// The broker's log against the relay's and the consumer's: every publish
// is the record at the logged offset, with the same key, value and token
// headers; an unknown outcome is resolved by whether the record is there;
// every receive is a record that exists; every record is explained; every
// group's committed offset is the last one the logs committed.

// Record headers the relay writes (runner/internal/relay HeaderEventID,
// HeaderClaimVersion, HeaderClaimID).
const (
	headerEventID      = "event_id"
	headerClaimVersion = "claim_version"
	headerClaimID      = "claim_id"
)

// recordProblems compares a record with a publish (or publish_unknown)
// event: the key, the event id header, the token headers and, when the
// binlog shows the intent, the value.
func (s *scenarioCheck) recordProblems(e evidence.Event, r broker.Record) []string {
	var problems []string
	wantKey, wantID := e.RecordKey, e.RecordEventID
	if wantKey == "" && wantID == "" {
		wantKey, wantID = strconv.FormatInt(i64(e.OrderID), 10), e.EventID
	}
	if string(r.Key) != wantKey { // a null key is logged as none
		problems = append(problems, fmt.Sprintf("its key is %s, the log says %q", showBytes(r.Key), wantKey))
	}
	want := []broker.Header{{Key: headerEventID, Value: []byte(wantID)}}
	if e.ClaimVersion != nil {
		want = append(want, broker.Header{Key: headerClaimVersion, Value: []byte(strconv.FormatInt(*e.ClaimVersion, 10))},
			broker.Header{Key: headerClaimID, Value: []byte(e.ClaimID)})
	}
	for _, h := range want {
		if got, ok := r.Header(h.Key); !ok || !bytes.Equal(got, h.Value) {
			problems = append(problems, fmt.Sprintf("its %s header is %s, the log says %q", h.Key, showHeader(got, ok), h.Value))
		}
	}
	if s.payloads != nil {
		if p, ok := s.payloads[e.EventID]; ok && !sameJSON(r.Value, []byte(p)) {
			problems = append(problems, fmt.Sprintf("its value %s is not the intent's payload %s in the binlog", showBytes(r.Value), p))
		}
	}
	return problems
}

func showBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(clip(string(b), 120))
}

func showHeader(b []byte, ok bool) string {
	if !ok {
		return "missing"
	}
	return showBytes(b)
}

// sameJSON compares two JSON documents after parsing (MariaDB stores a
// JSON column's text as given; a relay may re-encode it).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// publishes checks each acknowledged publish against its record and each
// refused one against the log's having no record of its token.
func (s *scenarioCheck) publishes() {
	for _, w := range s.kinds(evidence.KindPublish) {
		e := w.e
		if e.Offset == nil || e.Partition == nil {
			if r, ok := s.tokenRecord(e); ok {
				s.records[r] = true
				s.add(w.reason("witness-publish-refused", recordWhere(r.topic, r.partition, r.offset), "the log says the broker "+
					"refused the publish of %s (%s: %s), but the broker's log holds that record", e.EventID, tokenText(i64(e.ClaimVersion), e.ClaimID), e.Err))
			}
			continue
		}
		where := recordWhere(e.Topic, *e.Partition, *e.Offset)
		r, ok := s.log.Record(e.Topic, *e.Partition, *e.Offset)
		if !ok {
			s.add(w.reason("witness-publish", where, "the log says %s was published at %s, but the broker's log has no record there", e.EventID, where))
			continue
		}
		s.records[recordKey{e.Topic, *e.Partition, *e.Offset}] = true
		if problems := s.recordProblems(e, r); len(problems) > 0 {
			s.add(w.reason("witness-publish", where, "the record at %s is not the one the log says was published: %s", where,
				strings.Join(problems, "; ")))
			continue
		}
		s.sum.published = append(s.sum.published, recordKey{e.Topic, *e.Partition, *e.Offset})
	}
}

// tokenRecord finds a record, no event explained yet, of e's topic that
// carries e's event id and claim token in its headers.
func (s *scenarioCheck) tokenRecord(e evidence.Event) (recordKey, bool) {
	wantID := e.RecordEventID
	if wantID == "" {
		wantID = e.EventID
	}
	for _, p := range s.log.Topics[e.Topic] {
		for _, r := range p.Records {
			k := recordKey{r.Topic, r.Partition, r.Offset}
			if s.records[k] {
				continue
			}
			id, _ := r.Header(headerEventID)
			v, _ := r.Header(headerClaimVersion)
			cid, _ := r.Header(headerClaimID)
			if string(id) == wantID && string(v) == strconv.FormatInt(i64(e.ClaimVersion), 10) && string(cid) == e.ClaimID {
				return k, true
			}
		}
	}
	return recordKey{}, false
}

// unknownPublishes resolves each publish of unknown outcome: its record
// is in the broker's log (it landed) or it is not.
func (s *scenarioCheck) unknownPublishes() {
	for _, w := range s.kinds(evidence.KindPublishUnknown) {
		k, ok := s.tokenRecord(w.e)
		if !ok {
			s.sum.unknownLost++
			continue
		}
		s.records[k] = true
		r, _ := s.log.Record(k.topic, k.partition, k.offset)
		if problems := s.recordProblems(w.e, r); len(problems) > 0 {
			s.add(w.reason("witness-publish", recordWhere(k.topic, k.partition, k.offset), "the record of the unknown publish "+
				"of %s is not what the log says was sent: %s", w.e.EventID, strings.Join(problems, "; ")))
			continue
		}
		s.sum.unknownLanded = append(s.sum.unknownLanded, k)
	}
}

// diedHolding resolves the publishes that were in flight when their
// relay's process died: a claim whose actor ended, not cleanly (a
// process_exit other than "exit 0"), without a publish of any outcome
// with its token logged by it. The broker may hold one record with that
// token (appended before the SIGKILL fell); it is that publish's, and
// counted as an unknown publish that landed.
func (s *scenarioCheck) diedHolding() {
	died := map[string]bool{}
	for _, w := range s.kinds(evidence.KindProcessExit) {
		if w.e.Detail != "exit 0" && w.e.Target != "" {
			died[w.e.Target] = true
		}
	}
	if len(died) == 0 {
		return
	}
	type token struct {
		actor, id, claimID string
		version            int64
	}
	outcome := map[token]bool{}
	for _, w := range s.kinds(evidence.KindPublish, evidence.KindPublishUnknown) {
		outcome[token{w.e.Actor, w.e.EventID, w.e.ClaimID, i64(w.e.ClaimVersion)}] = true
	}
	for _, w := range s.kinds(evidence.KindClaim) {
		e := w.e
		if !died[e.Actor] || outcome[token{e.Actor, e.EventID, e.ClaimID, i64(e.ClaimVersion)}] {
			continue
		}
		for _, t := range s.scenarioTopics() {
			e.Topic = t
			if k, ok := s.tokenRecord(e); ok {
				s.records[k] = true
				s.sum.unknownLanded = append(s.sum.unknownLanded, k)
				break
			}
		}
	}
}

// receives: each receive is a record that exists, of the logged event.
func (s *scenarioCheck) receives() {
	for _, w := range s.kinds(evidence.KindReceive) {
		e := w.e
		where := recordWhere(e.Topic, i32(e.Partition), i64(e.Offset))
		r, ok := s.log.Record(e.Topic, i32(e.Partition), i64(e.Offset))
		if !ok {
			s.add(w.reason("witness-receive", where, "the log says %s was received from %s, but the broker's log has no record there",
				e.EventID, where))
			continue
		}
		if id, _ := r.Header(headerEventID); string(id) != e.EventID {
			s.add(w.reason("witness-receive", where, "the record at %s carries event %q, the log says %s was received", where, id, e.EventID))
			continue
		}
		s.sum.received++
	}
}

// scenarioTopics returns the broker's topics of the scenario.
func (s *scenarioCheck) scenarioTopics() []string {
	var out []string
	for _, t := range s.log.TopicNames() {
		if topicOf(t, s.runID, s.sc.ID) {
			out = append(out, t)
		}
	}
	return out
}

// unloggedRecords: every record of the scenario's topics is one a publish
// explains.
func (s *scenarioCheck) unloggedRecords() {
	for _, t := range s.scenarioTopics() {
		for _, p := range s.log.Topics[t] {
			for _, r := range p.Records {
				if s.records[recordKey{t, r.Partition, r.Offset}] {
					continue
				}
				id, _ := r.Header(headerEventID)
				s.unexplained(finding.Reason{Rule: "witness-unlogged-record", Status: finding.Fail, Witness: recordWhere(t, r.Partition, r.Offset),
					Message: fmt.Sprintf("the broker holds a record of event %q (key %s) that no publish of the scenario's logs explains", id, showBytes(r.Key))})
			}
		}
	}
}

// offsets: for each group and partition of the scenario's topics, the
// offset the broker holds is the last one the logs committed.
func (s *scenarioCheck) offsets() {
	type gp struct {
		group, topic string
		partition    int32
	}
	last := map[gp]Event{}
	var order []gp
	for _, w := range s.kinds(evidence.KindOffsetCommit) {
		k := gp{w.e.Consumer, w.e.Topic, i32(w.e.Partition)}
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = w
	}
	for _, k := range order {
		w := last[k]
		got, ok := s.log.Committed(k.group, k.topic, k.partition)
		where := fmt.Sprintf("group %s %s/%d", k.group, k.topic, k.partition)
		switch {
		case !ok:
			s.add(w.reason("witness-offset", where, "the log's last offset commit of group %s on %s/%d is %d, but the broker holds "+
				"no committed offset for it", k.group, k.topic, k.partition, i64(w.e.Offset)))
		case got != i64(w.e.Offset):
			s.add(w.reason("witness-offset", where, "the log's last offset commit of group %s on %s/%d is %d, but the broker holds %d",
				k.group, k.topic, k.partition, i64(w.e.Offset), got))
		default:
			s.sum.offsets = append(s.sum.offsets, fmt.Sprintf("p%d=%d", k.partition, got))
		}
	}
	for _, g := range orderedKeys(s.log.Groups) {
		for _, t := range s.scenarioTopics() {
			for _, p := range orderedKeys(s.log.Groups[g][t]) {
				if _, ok := last[gp{g, t, p}]; !ok {
					s.unexplained(finding.Reason{Rule: "witness-offset", Status: finding.Fail, Witness: fmt.Sprintf("group %s %s/%d", g, t, p),
						Message: fmt.Sprintf("the broker holds offset %d committed by group %s on %s/%d, which no offset commit of "+
							"the scenario's logs explains", s.log.Groups[g][t][p], g, t, p)})
				}
			}
		}
	}
	slices.Sort(s.sum.offsets)
}

// clip cuts s to at most n bytes, for a message.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
