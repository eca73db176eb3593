package main

import (
	"context"
	"io"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// envJWTSecret holds the order service's HS256 secret, hex encoded.
const envJWTSecret = actor.EnvJWTSecret

const actorAbout = `Runs one actor of the system under test as this whole process, so that a
scenario can SIGKILL it at a fault point. Internal: 'run' starts it; the
flags are the contract of runner/actor.Spec.

Roles:
  orders    the HTTP order service; first stdout line "listening on http://ADDR"
  relay     the outbox relay (--once: one round, then a JSON summary line)
  consumer  the inbox consumer (--once: until the --until-* counts, then a JSON stats line)

The server comes only from $` + infra.EnvMySQLDSN + ` (never from the command
line, which ps shows) and the database from --db, which must be a scratch
database carrying the orderflow-audit marker. The orders actor reads its
HS256 secret (hex) from $` + actor.EnvJWTSecret + `. SIGINT/SIGTERM stop an
actor cleanly (exit 0); a fault point armed with "kill" ends it by SIGKILL,
one armed with "crash" makes it exit 5.`

func cmdActor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	top := newFlagSet("actor", "actor orders|relay|consumer [flags]", actorAbout,
		`ORDERFLOW_MYSQL_DSN='root@tcp(127.0.0.1:3306)/' orderflow-audit actor relay --db ofa_run1_normalchain --brokers 127.0.0.1:9092 --topic orders --once`)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if code, ok := top.parse(args, stdout, stderr); !ok {
			return code
		}
		return fail(stderr, "actor", usageErrorf("missing role: orders, relay or consumer"))
	}
	role, err := actor.ParseRole(args[0])
	if err != nil {
		return fail(stderr, "actor", err)
	}
	spec := actor.Spec{Role: role}
	name := "actor " + string(role)
	fs := newFlagSet(name, name+" --db NAME [flags]", actorAbout, actorExample(role))
	spec.RegisterFlags(fs.FlagSet)
	if code, ok := fs.parse(args[1:], stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, name, usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	return fail(stderr, name, actor.Run(ctx, spec, stdout))
}

func actorExample(r actor.Role) string {
	switch r {
	case actor.Orders:
		return `ORDERFLOW_JWT_SECRET=$(openssl rand -hex 32) orderflow-audit actor orders --db ofa_run1_placement --listen 127.0.0.1:0`
	case actor.Relay:
		return `orderflow-audit actor relay --db ofa_run1_sendbeforemarkcrash --brokers 127.0.0.1:9092 --topic t --once --fault ` + string(spec.AfterPublishBeforeMark) + `:kill`
	default:
		return `orderflow-audit actor consumer --db ofa_run1_offsetreplay --brokers 127.0.0.1:9092 --topic t --group g --once --until-effects 1 --log c.jsonl --run-id run1 --scenario offsetReplay`
	}
}
