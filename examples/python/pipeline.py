#!/usr/bin/python3
"""A shop's outbox pipeline written in Python, audited as a black box.

One file, one subcommand per process (README.md):

  service   HTTP: POST /purchases writes a purchase and its PurchaseMade
            event (the outbox row) in one transaction.
  relay     claims outbox rows (FOR UPDATE SKIP LOCKED), publishes them to
            Kafka, deletes them once Kafka acknowledged, and commits.
  consumer  a Kafka consumer group member: an inbox row and an email in one
            transaction per record, then the group's offsets.

Nothing here knows about orderflow-audit: the audit reads the binlog and
the broker. Debian's python3-pymysql and python3-kafka (kafka-python) are
the only dependencies.

Settings are flags that default to environment variables: MYSQL_DSN (the
go-sql-driver form user:password@tcp(host:port)/database, which is what the
audit hands its roles), KAFKA_BROKERS, LISTEN_ADDR.
"""

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pymysql

log = logging.getLogger("shop")

DSN_RE = re.compile(
    r"^(?:(?P<user>[^:@]*)(?::(?P<password>[^@]*))?@)?"
    r"(?:tcp\((?P<host>[^)]*)\))?/(?P<db>[^?]*)(?:\?.*)?$")


def parse_dsn(dsn, database):
    """The keyword arguments of pymysql.connect for a go-sql-driver DSN."""
    m = DSN_RE.match(dsn or "")
    if not m:
        raise SystemExit("MYSQL_DSN: not of the form user:password@tcp(host:port)/database")
    host, port = "127.0.0.1", 3306
    if m.group("host"):
        host, _, p = m.group("host").rpartition(":")
        port = int(p) if p else 3306
        host = host or "127.0.0.1"
    return dict(user=m.group("user") or "root", password=m.group("password") or "",
                host=host, port=port, database=database or m.group("db") or None,
                autocommit=False, connect_timeout=5, read_timeout=10,
                write_timeout=10, charset="utf8mb4")


def connect(opts):
    return pymysql.connect(**opts)


# --- service -------------------------------------------------------------

class Shop(BaseHTTPRequestHandler):
    db = None  # connection options, set by serve

    def log_message(self, fmt, *args):  # the audit keeps stderr; keep it short
        pass

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path != "/health":
            return self.answer(404, {"error": "not found"})
        try:
            conn = connect(self.db)
            conn.close()
        except pymysql.MySQLError as e:
            return self.answer(503, {"error": str(e)})
        self.answer(200, {"ok": True})

    def do_POST(self):
        if self.path != "/purchases":
            return self.answer(404, {"error": "not found"})
        key = self.headers.get("Idempotency-Key", "")
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            item, amount, note = str(req["item"]), int(req["amount"]), str(req.get("note", ""))
        except (ValueError, KeyError, TypeError) as e:
            return self.answer(400, {"error": "bad body: %s" % e})
        if not key or len(key) > 128:
            return self.answer(400, {"error": "Idempotency-Key: 1 to 128 characters"})
        try:
            conn = connect(self.db)
        except pymysql.MySQLError as e:
            return self.answer(503, {"error": str(e)})
        try:
            code, body = purchase(conn, key, item, amount, note)
        except pymysql.MySQLError as e:
            code, body = 503, {"error": str(e)}
        finally:
            conn.close()
        self.answer(code, body)


def purchase(conn, key, item, amount, note):
    """Writes the purchase and its event in one transaction; a key used
    before answers its purchase and writes nothing."""
    message_id = str(uuid.uuid4())
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO purchases (request_key, message_id, item, amount, note)"
                        " VALUES (%s, %s, %s, %s, %s)", (key, message_id, item, amount, note))
            purchase_id = cur.lastrowid
            body = json.dumps({"type": "PurchaseMade", "message_id": message_id,
                               "purchase_id": purchase_id, "item": item,
                               "amount": amount, "note": note})
            cur.execute("INSERT INTO event_queue (message_id, stream_key, body) VALUES (%s, %s, %s)",
                        (message_id, str(purchase_id), body))
        conn.commit()
        return 201, {"purchase_id": purchase_id, "message_id": message_id}
    except pymysql.IntegrityError as e:
        conn.rollback()
        if e.args[0] != 1062:
            raise
    with conn.cursor() as cur:
        cur.execute("SELECT id, message_id FROM purchases WHERE request_key = %s", (key,))
        row = cur.fetchone()
    conn.rollback()
    if row is None:
        return 409, {"error": "request key taken, purchase not found"}
    return 200, {"purchase_id": row[0], "message_id": row[1], "replay": True}


def serve(args, db):
    Shop.db = db
    host, _, port = args.listen.rpartition(":")
    srv = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Shop)
    srv.daemon_threads = True
    log.info("service listening on %s", args.listen)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    wait_for_signal()
    srv.shutdown()


# --- relay ---------------------------------------------------------------

def producer(brokers):
    from kafka import KafkaProducer
    return KafkaProducer(bootstrap_servers=brokers.split(","), acks="all",
                         retries=3, max_in_flight_requests_per_connection=1,
                         request_timeout_ms=5000, linger_ms=0)


def relay(args, db):
    prod = producer(args.brokers)
    conn = None
    while not stopping.is_set():
        try:
            if conn is None:
                conn = connect(db)
            if relay_round(conn, prod, args) == 0:
                stopping.wait(args.poll)
        except pymysql.MySQLError as e:
            log.warning("relay round failed, rows stay for the next one: %s", e)
            close_quietly(conn)
            conn = None
            stopping.wait(0.5)
    close_quietly(conn)
    prod.close(timeout=2)


def relay_round(conn, prod, args):
    """One claim: lock a batch, publish it, delete it, commit. A failed
    publish or commit leaves the rows for the next round (a duplicate, never
    a loss)."""
    with conn.cursor() as cur:
        cur.execute("SELECT seq, message_id, stream_key, body FROM event_queue"
                    " ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED", (args.batch,))
        rows = cur.fetchall()
        if not rows:
            conn.commit()
            return 0
        if args.delete_first:
            # The planted bug (--delete-first): the rows go before Kafka has
            # them, so a relay that dies here, or a publish that fails, loses
            # the event for good.
            delete_rows(cur, rows)
            conn.commit()
        sent = [prod.send(args.topic, key=r[2].encode(), value=r[3].encode(),
                          headers=[("message_id", r[1].encode())]) for r in rows]
        try:
            for f in sent:
                f.get(timeout=10)
        except Exception as e:  # kafka.errors.KafkaError, timeouts
            log.warning("publish of %d rows failed: %s", len(rows), e)
            conn.rollback()
            stopping.wait(0.5)
            return len(rows)
        if not args.delete_first:
            delete_rows(cur, rows)
            conn.commit()
    return len(rows)


def delete_rows(cur, rows):
    """Deletes the claimed rows (seq is each row's first column)."""
    cur.execute("DELETE FROM event_queue WHERE seq IN (%s)" % ",".join(["%s"] * len(rows)),
                [r[0] for r in rows])


# --- consumer ------------------------------------------------------------

def consume(args, db):
    from kafka import KafkaConsumer
    from kafka.errors import CommitFailedError, KafkaError
    cons = KafkaConsumer(args.topic, group_id=args.group, bootstrap_servers=args.brokers.split(","),
                         enable_auto_commit=False, auto_offset_reset="earliest",
                         session_timeout_ms=6000, heartbeat_interval_ms=1000,
                         max_poll_interval_ms=30000, max_poll_records=50)
    conn = None
    uncommitted = False
    while not stopping.is_set():
        batch = cons.poll(timeout_ms=500)
        for records in batch.values():
            for rec in records:
                conn = handle(conn, db, args.handler, rec)
        uncommitted = uncommitted or bool(batch)
        if uncommitted:
            # A failed commit is tried again on the next round, records or
            # not: the first version only committed after a batch, so a
            # commit that failed once with nothing more to read left the
            # group's offset behind for good (the audit's `lag` rule found
            # it; README.md). After a rebalance the records come again and
            # the inbox absorbs them.
            try:
                cons.commit()
                uncommitted = False
            except (CommitFailedError, KafkaError) as e:
                log.warning("offset commit failed, trying again: %s", e)
    close_quietly(conn)
    cons.close(autocommit=False)


def handle(conn, db, handler, rec):
    """Inbox row and email in one transaction, retried until it commits: a
    record's offset is committed only after its effect is."""
    message_id = dict(rec.headers or []).get("message_id", b"").decode()
    event = json.loads(rec.value)
    while True:
        try:
            if conn is None:
                conn = connect(db)
            with conn.cursor() as cur:
                fresh = cur.execute("INSERT IGNORE INTO processed (handler, message_id, part, kafka_offset)"
                                    " VALUES (%s, %s, %s, %s)", (handler, message_id, rec.partition, rec.offset))
                if fresh == 1:
                    cur.execute("INSERT INTO emails (handler, message_id, purchase_id, subject) VALUES (%s, %s, %s, %s)",
                                (handler, message_id, event["purchase_id"], "Thank you for %s" % event["item"]))
            conn.commit()
            return conn
        except pymysql.MySQLError as e:
            log.warning("record %d/%d not handled yet: %s", rec.partition, rec.offset, e)
            close_quietly(conn)
            conn = None
            if stopping.wait(0.3):
                raise SystemExit(1)


# --- common --------------------------------------------------------------

stopping = threading.Event()


def wait_for_signal():
    while not stopping.wait(1):
        pass


def close_quietly(conn):
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass


def main(argv):
    ap = argparse.ArgumentParser(prog="pipeline.py", description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["service", "relay", "consumer"])
    ap.add_argument("--dsn", default=os.environ.get("MYSQL_DSN", ""), help="go-sql-driver DSN [MYSQL_DSN]")
    ap.add_argument("--db", default="", help="database, replacing the DSN's")
    ap.add_argument("--brokers", default=os.environ.get("KAFKA_BROKERS", ""), help="host:port,... [KAFKA_BROKERS]")
    ap.add_argument("--listen", default=os.environ.get("LISTEN_ADDR", "127.0.0.1:8080"), help="service address [LISTEN_ADDR]")
    ap.add_argument("--topic", default="purchases")
    ap.add_argument("--batch", type=int, default=20, help="relay: rows per claim")
    ap.add_argument("--poll", type=float, default=0.05, help="relay: seconds between empty claims")
    ap.add_argument("--delete-first", action="store_true", help="relay: the planted bug, delete and commit before publishing")
    ap.add_argument("--group", default="mailer", help="consumer: group id")
    ap.add_argument("--handler", default="mailer", help="consumer: the inbox's handler name")
    args = ap.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s " + args.command + " %(levelname)s %(message)s")
    # kafka-python's group membership at INFO (joins, assignments,
    # revocations: what an audit's report needs to explain a lag), its
    # connections only when they fail.
    logging.getLogger("kafka").setLevel(logging.WARNING)
    logging.getLogger("kafka.coordinator").setLevel(logging.INFO)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    db = parse_dsn(args.dsn, args.db)
    if args.command != "service" and not args.brokers:
        raise SystemExit("KAFKA_BROKERS or --brokers is required")
    {"service": serve, "relay": relay, "consumer": consume}[args.command](args, db)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
