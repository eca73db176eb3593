package checks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/spec"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Unknown outcomes settled by the database's witness. A process killed
// between a COMMIT and the line that records it, or a connection killed
// during COMMIT, leaves a transaction that committed and that no actor
// logged: its outcome is unknown to the actors, and the replay would miss
// it (a later claim skips a claim_version, an effect has no inbox row,
// an order has no order_committed). The binary log says what committed.
// resolveUnlogged finds the scenario's transactions that no logged event
// accounts for and turns each into the events the actor would have
// written, placed where the history needs them (before the first event
// that depends on them), as the log of the actor "witness"; the replay
// folds it with the actors' logs. Every resolution is listed in the
// verdict (Resolved).
//
// It runs for scenarios whose actors can die mid-operation (the nemesis
// of the chaos scenario killed a process, a connection or the database).

// ResolvedActor names the events the witness settled.
const ResolvedActor = model.WitnessActor

// resolvedLogPath is the synthetic log's path in reasons.
const resolvedLogPath = "witness/db (unlogged commits)"

// Resolution is one transaction the witness showed committed that no actor
// logged.
type Resolution struct {
	Scenario string `json:"scenario"`
	GTID     string `json:"gtid"`
	What     string `json:"what"`
}

// unloggedCauses are the faults after which a commit may go unlogged: the
// nemesis's, and the call sweep's (a COMMIT whose answer was lost after
// it committed: the consumer logs commit_unknown, not the rows).
var unloggedCauses = []string{"nemesis-kill", "nemesis-conn-kill", "nemesis-db-crash", "nemesis-net-cut", "nemesis-latency",
	string(spec.CallFailed)}

// resolveUnlogged returns the synthetic log of the events the witness
// settled for sc (nil when there is nothing to settle), and what it
// settled.
func (c *checker) resolveUnlogged(sc *evidence.Scenario) (*evidence.MergeLog, []Resolution) {
	w := c.ev.Witness
	if w == nil || w.Database == nil || sc.Database == "" || !slices.ContainsFunc(sc.FaultPoints, func(p string) bool {
		return slices.Contains(unloggedCauses, p)
	}) {
		return nil, nil
	}
	logged, err := c.loggedEvents(sc)
	if err != nil {
		return nil, nil // the replay reports the logs' problems
	}
	if !slices.ContainsFunc(logged, func(e evidence.Event) bool {
		return e.Kind == evidence.KindFault && slices.Contains(unloggedCauses, e.Point)
	}) {
		return nil, nil
	}
	txs := c.scenarioTransactions(sc.Database)
	out, res := resolveTransactions(txs, logged)
	if len(out) == 0 {
		return nil, nil
	}
	for i := range res {
		res[i].Scenario = sc.ID
	}
	return syntheticLog(c.ev.Run.ID, sc.ID, out), res
}

// loggedEvents reads every event of the scenario's logs, through the
// bundle's gate (the replay reads them again and reports their problems).
func (c *checker) loggedEvents(sc *evidence.Scenario) ([]evidence.Event, error) {
	var all []evidence.Event
	for _, ref := range sc.Logs {
		f, err := c.b.OpenFile(ref.Path, bundle.KindLog)
		if err != nil {
			return nil, err
		}
		evs, err := evidence.ReadEventsFrom(f.Reader(), ref.Path)
		f.Close()
		if err != nil && !errors.Is(err, evidence.ErrTruncated) {
			return nil, err
		}
		all = append(all, evs...)
	}
	return all, nil
}

// scenarioTransactions reads the binlog files of the witness one by one
// (a file the server did not close because it crashed is read up to its
// last whole transaction) and keeps the changes in schema.
func (c *checker) scenarioTransactions(schema string) []binlog.Transaction {
	var out []binlog.Transaction
	for _, f := range c.ev.Witness.Database.Files {
		// The gate holds the file to the evidence's size and sha256 (the
		// witness step reported it if it failed) and hands out the bytes
		// it verified, without reading the file again.
		in, err := c.b.Inputs([]evidence.WitnessFile{f})
		if err != nil {
			continue
		}
		_, _ = binlog.ScanInputs([]binlog.Input{{Name: in[0].Name, R: in[0].R}}, func(t binlog.Transaction) error {
			var keep []binlog.RowChange
			for _, ch := range t.Changes {
				if ch.Schema == schema {
					keep = append(keep, ch)
				}
			}
			if len(keep) > 0 {
				t.Changes = keep
				out = append(out, t)
			}
			return nil
		})
	}
	return out
}

// resolved is one synthesized event with where it must go.
type resolved struct {
	ev evidence.Event
	at time.Time
}

// resolveTransactions compares the transactions with the logged events
// and synthesizes the events of the transactions no event accounts for.
func resolveTransactions(txs []binlog.Transaction, logged []evidence.Event) ([]resolved, []Resolution) {
	ix := indexLogged(logged)
	var out []resolved
	var res []Resolution
	for _, t := range txs {
		evs := ix.unlogged(t)
		if len(evs) == 0 {
			continue
		}
		var kinds []string
		for _, r := range evs {
			kinds = append(kinds, string(r.ev.Kind)+" "+r.ev.EventID)
		}
		res = append(res, Resolution{GTID: t.GTID.String(), What: fmt.Sprintf("committed, not logged: %v", kinds)})
		out = append(out, evs...)
	}
	slices.SortStableFunc(out, func(a, b resolved) int { return a.at.Compare(b.at) })
	return out, res
}

// syntheticLog renders the events as a log of ResolvedActor, seq in time
// order, with the digest and line count its reference needs.
func syntheticLog(runID, scenario string, evs []resolved) *evidence.MergeLog {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, r := range evs {
		e := r.ev
		e.Seq, e.Time, e.RunID, e.Scenario, e.Actor = int64(i+1), r.at.UTC(), runID, scenario, ResolvedActor
		_ = enc.Encode(&e)
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	ref := evidence.LogRef{Path: resolvedLogPath, Actor: ResolvedActor, SHA256: hex.EncodeToString(sum[:]), Lines: int64(len(evs))}
	return &evidence.MergeLog{Ref: ref, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

// loggedIndex is what the logged events account for, and when the events
// that depend on an unlogged one happened.
type loggedIndex struct {
	orders   map[int64]bool
	claims   map[string]bool      // event id / claim version
	marks    map[string]bool      // event id (a mark that hit a row)
	inbox    map[string]bool      // consumer / event id
	effects  map[int64]bool       // notification id
	first    map[string]time.Time // the first event naming an event id
	tokenUse map[string]time.Time // the first publish or mark of event id / version / claim id
	lastPub  map[string]time.Time // the last publish of event id / version / claim id
	recv     map[string]time.Time // the first receive of topic/partition/offset
	leaseMS  int64                // a lease the relays logged (for a claim's time)
}

func settleTokenKey(e string, v int64, id string) string {
	return e + "/" + strconv.FormatInt(v, 10) + "/" + id
}

func indexLogged(evs []evidence.Event) *loggedIndex {
	ix := &loggedIndex{orders: map[int64]bool{}, claims: map[string]bool{}, marks: map[string]bool{}, inbox: map[string]bool{},
		effects: map[int64]bool{}, first: map[string]time.Time{}, tokenUse: map[string]time.Time{}, lastPub: map[string]time.Time{},
		recv: map[string]time.Time{}}
	early := func(m map[string]time.Time, k string, t time.Time) {
		if old, ok := m[k]; !ok || t.Before(old) {
			m[k] = t
		}
	}
	for _, e := range evs {
		if e.EventID != "" {
			early(ix.first, e.EventID, e.Time)
		}
		v := int64(0)
		if e.ClaimVersion != nil {
			v = *e.ClaimVersion
		}
		switch e.Kind {
		case evidence.KindOrderCommitted:
			ix.orders[*e.OrderID] = true
		case evidence.KindOrderReplayed:
			early(ix.first, evidence.EventIDFor(*e.OrderID), e.Time)
		case evidence.KindClaim:
			ix.claims[e.EventID+"/"+strconv.FormatInt(v, 10)] = true
			if e.LeaseMS != nil {
				ix.leaseMS = *e.LeaseMS
			}
		case evidence.KindPublish, evidence.KindPublishUnknown:
			early(ix.tokenUse, settleTokenKey(e.EventID, v, e.ClaimID), e.Time)
			if t := ix.lastPub[settleTokenKey(e.EventID, v, e.ClaimID)]; e.Time.After(t) {
				ix.lastPub[settleTokenKey(e.EventID, v, e.ClaimID)] = e.Time
			}
		case evidence.KindMark:
			early(ix.tokenUse, settleTokenKey(e.EventID, v, e.ClaimID), e.Time)
			if e.Rows != nil && *e.Rows > 0 {
				ix.marks[e.EventID] = true
			}
		case evidence.KindInboxInsert:
			ix.inbox[e.Consumer+"/"+e.EventID] = true
		case evidence.KindEffect:
			ix.effects[*e.NotificationID] = true
		case evidence.KindReceive:
			early(ix.recv, settleRecordID(e.Topic, *e.Partition, *e.Offset), e.Time)
		}
	}
	return ix
}

func settleRecordID(topic string, p int32, off int64) string {
	return topic + "/" + strconv.Itoa(int(p)) + "@" + strconv.FormatInt(off, 10)
}

// placeBefore is a moment just before t (the first event that needs the
// unlogged one), or at when that is earlier.
func placeBefore(at time.Time, t time.Time, ok bool) time.Time {
	if ok && !t.After(at) {
		return t.Add(-time.Microsecond)
	}
	return at
}
