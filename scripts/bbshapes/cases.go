package main

// The histories: per shape a legal one and breaking ones, and per rule of
// the black-box layer a history that breaks it, each with the verdict it
// must get and the rules that are not PASS (nor N/A) in it. These
// expectations are stated here, from what each history does; the script
// fails when the verifier disagrees, and the committed expect.json holds
// the test (checks/bbverify) to them.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

type history struct {
	shape *shape
	name  string
	what  string
	// duplicates and liveness fill the profile's promises (default
	// allowed, 30s).
	duplicates, liveness string
	run                  func(ctx context.Context, p *pipe) error
	// client: the bundle holds our load client's history.
	client bool
	want   string
	rules  map[string]string
}

const (
	pass = "PASS"
	fail = "FAIL"
	inc  = "INCONCLUSIVE"
)

func histories() []history {
	return []history{
		// cursor
		{shape: &cursorShape, name: "legal", what: "three orders relayed in offset order and consumed once", client: true,
			run: cursorLegal, want: pass},
		{shape: &cursorShape, name: "lost-skipped", what: "order 1's transaction takes offset 1 and commits after the relay moved the cursor to offset 2 (a slow writer)", client: true,
			run: func(ctx context.Context, p *pipe) error {
				slow, err := p.open(ctx, placeSQL(1, "o-1", true)...)
				if err != nil {
					return err
				}
				if err := steps(
					func() error { return p.place(ctx, 2, "o-2", true) },
					func() error { return p.cursorRelay(ctx) },
					slow.Commit,
					func() error { return p.cursorRelay(ctx) },
					func() error { return p.consume(ctx, "notify", "c1") },
				); err != nil {
					return err
				}
				p.client = append(p.client, request{N: 1, Token: "tok-1", Key: "k-1", Outcome: "ok", Status: 201, Start: time.Now().UTC(), End: time.Now().UTC()})
				return nil
			},
			want: fail, rules: map[string]string{"lost-skipped": fail}},
		{shape: &cursorShape, name: "progress", what: "the legal history, then the cursor set back to offset 1", client: true,
			run: func(ctx context.Context, p *pipe) error {
				return steps(func() error { return cursorLegal(ctx, p) },
					func() error { return p.tx(ctx, "UPDATE relay_cursor SET last_offset = 1 WHERE relay = 'r1'") })
			},
			want: fail, rules: map[string]string{"progress": fail}},
		{shape: &cursorShape, name: "commit-atomic", what: "an event row committed without its order's change", client: true,
			run: func(ctx context.Context, p *pipe) error {
				return steps(func() error { return cursorLegal(ctx, p) },
					func() error { return p.serve(ctx, 4, "tok-4", false, false, placeSQL(4, "o-2", false)[1]) },
					func() error { return p.cursorRelay(ctx) },
					func() error { return p.consume(ctx, "notify", "c1") })
			},
			want: fail, rules: map[string]string{"commit-atomic": fail}},
		{shape: &cursorShape, name: "answer", what: "request 4 answered 201 while its transaction rolled back", client: true,
			run: func(ctx context.Context, p *pipe) error {
				return steps(func() error { return cursorLegal(ctx, p) },
					func() error { return p.serve(ctx, 4, "tok-4", true, true, placeSQL(4, "o-3", true)...) })
			},
			want: fail, rules: map[string]string{"answer": fail}},
		{shape: &cursorShape, name: "answer-fail-legal", what: "request 4 answered 409 and its transaction rolled back", client: true,
			run: func(ctx context.Context, p *pipe) error {
				return steps(func() error { return cursorLegal(ctx, p) },
					func() error { return p.serve(ctx, 4, "tok-4", false, true, placeSQL(4, "o-3", true)...) })
			},
			want: pass},
		{shape: &cursorShape, name: "effects", what: "the consumer writes the inbox row of e-2 but not its effect, and commits its offset", client: true,
			run: func(ctx context.Context, p *pipe) error {
				p.noEffect["e-2"] = true
				return cursorLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"effects": fail}},
		{shape: &cursorShape, name: "effect-outside-inbox", what: "the consumer writes e-2's effect without its inbox row", client: true,
			run: func(ctx context.Context, p *pipe) error {
				p.noInbox["e-2"] = true
				return cursorLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"effect-outside-inbox": fail}},
		{shape: &cursorShape, name: "effect-orphan", what: "an inbox row and an effect of an event no transaction wrote", client: true,
			run: func(ctx context.Context, p *pipe) error {
				return steps(func() error { return cursorLegal(ctx, p) },
					func() error {
						return p.tx(ctx, "INSERT INTO inbox VALUES ('c1', 'e-9')", "INSERT INTO effect (consumer, event_id, order_id, body) VALUES ('c1', 'e-9', 'o-1', 'notified')")
					})
			},
			want: fail, rules: map[string]string{"effect-orphan": fail}},
		{shape: &cursorShape, name: "invariants", what: "the consumer writes e-2's effect naming an order that does not exist", client: true,
			run: func(ctx context.Context, p *pipe) error {
				p.orderOf["e-2"] = "o-404"
				return cursorLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"invariants": fail}},
		{shape: &cursorShape, name: "lag", what: "the consumer commits one offset short of the end", client: true,
			run: func(ctx context.Context, p *pipe) error {
				p.commitLess = 1
				return cursorLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"lag": fail}},
		{shape: &cursorShape, name: "order", what: "the consumer handles a partition's records newest first: o-1's e-3 before e-1", client: true,
			run: func(ctx context.Context, p *pipe) error {
				p.consumeRev = true
				return cursorLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"order": fail}},
		{shape: &cursorShape, name: "aggregate-split", what: "the relay publishes o-1's e-3 to partition 1, its e-1 to partition 0", client: true,
			run: func(ctx context.Context, p *pipe) error {
				p.part["e-3"] = 1
				return cursorLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"aggregate-split": fail}},
		{shape: &cursorShape, name: "duplicate-allowed", what: "e-1 published twice, absorbed by the inbox; duplicates are allowed", client: true,
			run: func(ctx context.Context, p *pipe) error {
				p.twice["e-1"] = true
				return cursorLegal(ctx, p)
			},
			want: pass},
		{shape: &cursorShape, name: "holes-broker", what: "the legal history, then partition 0's first record deleted (DeleteRecords): its log starts past the window", client: true,
			run: func(ctx context.Context, p *pipe) error {
				if err := cursorLegal(ctx, p); err != nil {
					return err
				}
				o := kadm.Offsets{}
				o.Add(kadm.Offset{Topic: p.topic, Partition: 0, At: 1, LeaderEpoch: -1})
				resp, err := p.adm.DeleteRecords(ctx, o)
				if err != nil {
					return err
				}
				return resp.Error()
			},
			want: inc, rules: map[string]string{"holes": inc, "lost-acked-not-published": inc}},

		{shape: &cursorShape, name: "holes-gtid", what: "the legal history with a GTID gap in the window: a transaction told to skip four sequence numbers (SET SESSION gtid_seq_no) between the second and the third order", client: true,
			run: func(ctx context.Context, p *pipe) error {
				return steps(
					func() error { return p.place(ctx, 1, "o-1", true) },
					func() error { return p.place(ctx, 2, "o-2", true) },
					func() error { return p.skipGTIDs(ctx, 4) },
					func() error { return p.place(ctx, 3, "o-1", false) },
					func() error { return p.cursorRelay(ctx) },
					func() error { return p.consume(ctx, "notify", "c1") },
				)
			},
			want: inc, rules: map[string]string{"holes": inc}},

		// completed
		{shape: &completedShape, name: "legal", what: "three publications relayed, each completed after its send",
			run: completedLegal, want: pass},
		{shape: &completedShape, name: "lost-acked-not-published", what: "publication 2 completed although its send never happened (spring-modulith#395)",
			run: func(ctx context.Context, p *pipe) error {
				p.drop[pubID(2)] = true
				return completedLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"lost-acked-not-published": fail}},
		{shape: &completedShape, name: "progress", what: "publication 1's completion_date cleared after it completed (a resubmission)",
			run: func(ctx context.Context, p *pipe) error {
				return steps(func() error { return completedLegal(ctx, p) },
					func() error {
						return p.tx(ctx, "UPDATE event_publication SET completion_date = NULL WHERE id = '"+pubID(1)+"'")
					})
			},
			want: fail, rules: map[string]string{"progress": fail}},
		{shape: &completedShape, name: "pending", liveness: "1s", what: "publication 3 written after the relay stopped, never completed, past a 1 s bound",
			run: func(ctx context.Context, p *pipe) error {
				err := steps(
					func() error { return p.publishEvent(ctx, 1, 7) },
					func() error { return p.publishEvent(ctx, 2, 8) },
					func() error { return p.completedRelay(ctx) },
					func() error { return p.publishEvent(ctx, 3, 7) })
				time.Sleep(1500 * time.Millisecond)
				return err
			},
			want: fail, rules: map[string]string{"pending": fail}},
		{shape: &completedShape, name: "pending-within-bound", what: "publication 3 not yet relayed at the end, within the 30 s bound",
			run: func(ctx context.Context, p *pipe) error {
				return steps(
					func() error { return p.publishEvent(ctx, 1, 7) },
					func() error { return p.completedRelay(ctx) },
					func() error { return p.publishEvent(ctx, 3, 7) })
			},
			want: inc, rules: map[string]string{"pending": inc}},

		// delete
		{shape: &deleteShape, name: "legal", what: "three rows published, each deleted after its send",
			run: deleteLegal, want: pass},
		{shape: &deleteShape, name: "lost-acked-not-published", what: "row e-2 deleted although its send never happened",
			run: func(ctx context.Context, p *pipe) error {
				p.drop["e-2"] = true
				return deleteLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"lost-acked-not-published": fail}},
		{shape: &deleteShape, name: "phantom", what: "a record naming event e-7, which no transaction wrote",
			run: func(ctx context.Context, p *pipe) error {
				return steps(func() error { return deleteLegal(ctx, p) },
					func() error { return p.produceRaw(ctx, "a-1", `{"n":7}`, map[string]string{"event_id": "e-7"}) })
			},
			want: fail, rules: map[string]string{"phantom": fail}},
		{shape: &deleteShape, name: "duplicate-none", duplicates: "none", what: "e-1 published twice under duplicates: none",
			run: func(ctx context.Context, p *pipe) error {
				p.twice["e-1"] = true
				return deleteLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"duplicate": fail}},
		{shape: &deleteShape, name: "duplicate-none-legal", duplicates: "none", what: "the legal history under duplicates: none",
			run: deleteLegal, want: pass},

		// debezium
		{shape: &debeziumShape, name: "legal", what: "three rows inserted and deleted in their transactions, routed with key aggregateid and header id",
			run: debeziumLegal, want: pass},
		{shape: &debeziumShape, name: "record-mismatch", what: "the router keys event 2's record by the event id, not aggregateid",
			run: func(ctx context.Context, p *pipe) error {
				p.key[dbzEvent(2, "o-2").id] = dbzEvent(2, "o-2").id
				return debeziumLegal(ctx, p)
			},
			want: fail, rules: map[string]string{"record-mismatch": fail}},
		{shape: &debeziumShape, name: "pending", liveness: "1s", what: "event 3 committed, never routed, past a 1 s bound",
			run: func(ctx context.Context, p *pipe) error {
				p.drop[dbzEvent(3, "o-1").id] = true
				err := debeziumLegal(ctx, p)
				time.Sleep(1500 * time.Millisecond)
				return err
			},
			want: fail, rules: map[string]string{"pending": fail}},
		{shape: &debeziumShape, name: "phantom", what: "event 4 routed before its transaction, which rolled back",
			run: func(ctx context.Context, p *pipe) error {
				r := dbzEvent(4, "o-2")
				return steps(func() error { return debeziumLegal(ctx, p) },
					func() error { return p.dbzEmit(ctx, r) },
					func() error {
						t, err := p.open(ctx, r.sql()...)
						if err != nil {
							return err
						}
						return t.Rollback()
					})
			},
			want: fail, rules: map[string]string{"phantom": fail}},
	}
}
