package crosscheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// Step 3: the witnesses belong to this run.

// topicPrefix is the prefix of every topic of a scenario:
// ofa.<run id>.<scenario>, alone or followed by ".<suffix>".
func topicPrefix(runID, scenario string) string { return "ofa." + runID + "." + scenario }

// topicOf tells whether topic is one of scenario's in run runID.
func topicOf(topic, runID, scenario string) bool {
	p := topicPrefix(runID, scenario)
	return topic == p || strings.HasPrefix(topic, p+".")
}

// ranScenarios are the scenarios the evidence says ran (a NOT_RUN one
// with nothing recorded has no witness to show).
func ranScenarios(ev *evidence.Evidence) []*evidence.Scenario {
	var out []*evidence.Scenario
	for i := range ev.Scenarios {
		sc := &ev.Scenarios[i]
		if sc.Status != evidence.StatusNotRun || len(sc.Logs) > 0 {
			out = append(out, sc)
		}
	}
	return out
}

// databaseBelongs checks the binlog's databases against the run's.
func (wc *witnessChecker) databaseBelongs(ws *Witnesses) {
	runID := wc.ev.Run.ID
	names := map[string]string{} // database -> scenario
	for _, sc := range wc.ev.Scenarios {
		names[evidence.ScratchName(runID, sc.ID)] = sc.ID
	}
	for _, schema := range orderedKeys(ws.db.bySchema) {
		txs := ws.db.bySchema[schema]
		where := txWhere(txs[0])
		switch _, listed := names[schema]; {
		case listed:
			// Its marker row: scenarioCheck.marker.
		case strings.HasPrefix(schema, "ofa_"+strings.ToLower(runID)+"_"):
			wc.failWitness("witness-scenario-unlisted", where, "the binlog holds database %s of this run, of a scenario the evidence "+
				"does not list: a scenario was left out of the evidence", schema)
		case ws.private:
			wc.failWitness("witness-foreign", where, "the binlog of the run's private server writes database %q, which is not one of "+
				"this run's (ofa_%s_<scenario>): the witness is of another run", schema, runID)
		}
	}
	for _, sc := range ranScenarios(wc.ev) {
		want := evidence.ScratchName(runID, sc.ID)
		if sc.Database != want {
			wc.reasons = append(wc.reasons, finding.Reason{Rule: "witness-names", Status: finding.Fail, Scenario: sc.ID, Field: "database",
				Claimed: sc.Database, Recomputed: want,
				Message: "the evidence names the scenario's database otherwise than the run names it"})
		}
		if !createsDatabase(ws.db.bySchema[want], want) {
			wc.reasons = append(wc.reasons, finding.Reason{Rule: "witness-scenario-absent", Status: finding.Fail, Scenario: sc.ID,
				Message: fmt.Sprintf("the binlog never creates the scenario's database %s: the witness is not of the run "+
					"that ran it (or was cut), so nothing the scenario claims about the database is witnessed", want)})
		}
	}
}

// createsDatabase tells whether txs hold the CREATE DATABASE of schema.
func createsDatabase(txs []binlog.Transaction, schema string) bool {
	for _, t := range txs {
		for _, s := range t.Statements {
			if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s.SQL)), "CREATE DATABASE") && strings.Contains(s.SQL, schema) {
				return true
			}
		}
	}
	return false
}

// gtidRange checks that the transactions after the start position carry
// one gapless run of GTIDs per replication domain, from gtid_start (its
// next sequence number) to gtid_end, on the server the evidence names.
func (wc *witnessChecker) gtidRange(after []binlog.Transaction, h binlog.History) {
	dw := wc.ev.Witness.Database
	where := wc.dbDir()
	start, err1 := parseGTIDList(dw.GTIDStart)
	end, err2 := parseGTIDList(dw.GTIDEnd)
	if err1 != nil || err2 != nil {
		wc.failWitness("witness-gtid", where, "the evidence's GTID range %q to %q cannot be read: %v", dw.GTIDStart, dw.GTIDEnd, errorsJoin(err1, err2))
		return
	}
	for _, f := range h.Files {
		if f.ServerVersion != dw.ServerVersion {
			wc.reasons = append(wc.reasons, finding.Reason{Rule: "witness-server", Status: finding.Fail, Witness: f.Name, Field: "server_version",
				Claimed: dw.ServerVersion, Recomputed: f.ServerVersion,
				Message: "the binlog file was written by another server version than the evidence names"})
		}
	}
	last := map[uint32]uint64{}
	for d, g := range start {
		last[d] = g.Seq
	}
	for _, t := range after {
		if t.GTID.Server != dw.ServerID && wc.ev.Environment.Database.Mode == evidence.DatabasePrivate {
			wc.reasons = append(wc.reasons, finding.Reason{Rule: "witness-server", Status: finding.Fail, Witness: txWhere(t), Field: "server_id",
				Claimed: strconv.FormatUint(uint64(dw.ServerID), 10), Recomputed: strconv.FormatUint(uint64(t.GTID.Server), 10),
				Message: "a transaction of the private server's binlog carries another server id than the evidence names"})
		}
		if want := last[t.GTID.Domain] + 1; t.GTID.Seq != want {
			wc.failWitness("witness-gtid", txWhere(t), "GTID %s where %d-%d-%d follows: a transaction is missing or out of order",
				t.GTID, t.GTID.Domain, t.GTID.Server, want)
		}
		last[t.GTID.Domain] = t.GTID.Seq
	}
	for _, d := range orderedKeys(end) {
		if got := last[d]; got != end[d].Seq {
			wc.failWitness("witness-gtid", where, "the binlog ends at sequence %d of domain %d, but gtid_end says %s: "+
				"transactions of the run are missing from the witness (or it is of another run)", got, d, end[d])
		}
	}
	for _, d := range orderedKeys(last) {
		if _, ok := end[d]; !ok && last[d] != start[d].Seq {
			wc.failWitness("witness-gtid", where, "the binlog has transactions of domain %d up to sequence %d, which gtid_end (%q) does not cover",
				d, last[d], dw.GTIDEnd)
		}
	}
}

// parseGTIDList parses @@gtid_binlog_pos: comma-separated GTIDs, one per
// domain; empty for a server that has logged nothing.
func parseGTIDList(s string) (map[uint32]binlog.GTID, error) {
	out := map[uint32]binlog.GTID{}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		g, err := binlog.ParseGTID(part)
		if err != nil {
			return nil, err
		}
		if _, dup := out[g.Domain]; dup {
			return nil, fmt.Errorf("domain %d twice in %q", g.Domain, s)
		}
		out[g.Domain] = g
	}
	return out, nil
}

func errorsJoin(errs ...error) error {
	var msgs []string
	for _, e := range errs {
		if e != nil {
			msgs = append(msgs, e.Error())
		}
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// brokerBelongs checks the broker's topics against the run's.
func (wc *witnessChecker) brokerBelongs(log *broker.Log) {
	runID := wc.ev.Run.ID
	for _, topic := range log.TopicNames() {
		if strings.HasPrefix(topic, "ofa."+runID+".") {
			if !slices.ContainsFunc(wc.ev.Scenarios, func(sc evidence.Scenario) bool { return topicOf(topic, runID, sc.ID) }) {
				wc.failWitness("witness-scenario-unlisted", topic, "the broker holds topic %s of this run, of a scenario the evidence does "+
					"not list: a scenario was left out of the evidence", topic)
			}
			continue
		}
		wc.failWitness("witness-foreign", topic, "the broker's witness holds topic %q, which is not one of this run's "+
			"(ofa.%s.<scenario>): the witness is of another run", topic, runID)
	}
	for _, sc := range ranScenarios(wc.ev) {
		for _, topic := range sc.Topics {
			if !topicOf(topic, runID, sc.ID) {
				wc.reasons = append(wc.reasons, finding.Reason{Rule: "witness-names", Status: finding.Fail, Scenario: sc.ID, Field: "topics",
					Claimed: topic, Recomputed: topicPrefix(runID, sc.ID),
					Message: "the evidence lists a topic for the scenario that is not named after this run and scenario"})
				continue
			}
			if _, ok := log.Topics[topic]; !ok {
				wc.reasons = append(wc.reasons, finding.Reason{Rule: "witness-scenario-absent", Status: finding.Fail, Scenario: sc.ID, Witness: topic,
					Message: fmt.Sprintf("the broker's witness has no topic %s: the witness is not of the run that ran the scenario, "+
						"so nothing the scenario claims about the broker is witnessed", topic)})
			}
		}
	}
}

// txWhere locates a transaction for a reason: its GTID and its place in
// the binlog.
func txWhere(t binlog.Transaction) string {
	return fmt.Sprintf("GTID %s (%s@%d)", t.GTID, t.File, t.Pos)
}

// recordWhere locates a broker record: topic/partition@offset.
func recordWhere(topic string, partition int32, offset int64) string {
	return fmt.Sprintf("%s/%d@%d", topic, partition, offset)
}
