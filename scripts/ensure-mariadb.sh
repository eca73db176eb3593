#!/usr/bin/env bash
# ensure-mariadb.sh makes sure of two things:
#
#  1. The MariaDB server programs are installed (mariadbd, mariadb-install-db,
#     and mariadb-binlog from the client): `orderflow-audit run` starts a
#     private mariadbd of its own by default, and the tests start private
#     servers too. It installs the mariadb-server package with apt-get when
#     one of them is missing, even when a server already answers on 3306.
#  2. A MariaDB server answers on 127.0.0.1:3306 for user root with an empty
#     password: the shared server of the integration tests, and the default
#     of `verify --mysql-dsn` and `clean` (root@tcp(127.0.0.1:3306)/).
#
# Idempotent: what is already there is only reported. Otherwise it starts
# mariadbd with start-stop-daemon (no systemd needed), waits for it, and on a
# fresh install (where root@localhost authenticates by unix_socket) allows
# root to log in over TCP with an empty password as well.
#
# Meant for a disposable development or CI machine (Debian/Ubuntu, run as
# root or with sudo): never point it at a server that holds data you care
# about, since it opens root to password-less local logins.
set -euo pipefail

export PATH="/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

HOST=127.0.0.1
PORT=3306
MARIADBD="${MARIADBD:-/usr/sbin/mariadbd}"
SOCKET="${MYSQL_SOCKET:-/run/mysqld/mysqld.sock}"
WAIT_SECONDS="${ENSURE_MARIADB_WAIT:-30}"

log() { printf 'ensure-mariadb: %s\n' "$*" >&2; }
die() { printf 'ensure-mariadb: error: %s\n' "$*" >&2; exit 1; }

# as_root runs a command as root (directly, or through sudo).
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

client() {
	if command -v mariadb >/dev/null 2>&1; then
		echo mariadb
	elif command -v mysql >/dev/null 2>&1; then
		echo mysql
	fi
}

# tcp_ok: root with an empty password can log in over TCP. --no-defaults
# keeps a ~/.my.cnf from supplying another user or password.
tcp_ok() {
	local c
	c="$(client)"
	[ -n "$c" ] || return 1
	"$c" --no-defaults --protocol=tcp -h "$HOST" -P "$PORT" -u root \
		--connect-timeout=3 -N -e 'SELECT 1' >/dev/null 2>&1
}

# socket_sql runs SQL as root over the unix socket (unix_socket auth).
socket_sql() {
	local c
	c="$(client)"
	[ -n "$c" ] || die "no mariadb/mysql client found"
	as_root "$c" --no-defaults --protocol=socket -S "$SOCKET" -u root -N -e "$1"
}

server_up() {
	[ -S "$SOCKET" ] && socket_sql 'SELECT 1' >/dev/null 2>&1 && return 0
	tcp_ok
}

check_listening() {
	local c out
	c="$(client)"
	out="$("$c" --no-defaults --protocol=tcp -h "$HOST" -P "$PORT" -u root -N \
		-e 'SELECT @@port, @@skip_networking, VERSION()' 2>&1)" ||
		die "cannot query the server over TCP: $out"
	log "MariaDB is reachable on $HOST:$PORT as root with an empty password ($(printf '%s' "$out" | awk '{print $3}'))"
}

# programs_missing names the server programs that are not installed.
programs_missing() {
	local missing=""
	[ -x "$MARIADBD" ] || missing="$missing $MARIADBD"
	for p in mariadb-install-db mariadb-binlog; do
		command -v "$p" >/dev/null 2>&1 || missing="$missing $p"
	done
	printf '%s' "${missing# }"
}

missing="$(programs_missing)"
if [ -n "$missing" ]; then
	log "not installed: $missing; installing mariadb-server with apt-get (run starts a private mariadbd)"
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install the MariaDB server yourself (mariadbd, mariadb-install-db, mariadb-binlog) and make root@127.0.0.1 log in with an empty password"
	as_root apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold mariadb-server
	missing="$(programs_missing)"
	[ -z "$missing" ] || die "apt-get install mariadb-server did not provide: $missing"
fi
log "server programs: $MARIADBD ($("$MARIADBD" --version 2>/dev/null | awk '{print $3}')), $(command -v mariadb-install-db), $(command -v mariadb-binlog)"

if tcp_ok; then
	check_listening
	exit 0
fi

if ! server_up; then
	as_root mkdir -p /run/mysqld /var/log/mysql
	as_root chown mysql:mysql /run/mysqld /var/log/mysql
	if [ ! -d /var/lib/mysql/mysql ]; then
		log "initialising the data directory /var/lib/mysql"
		as_root mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
	fi
	log "starting $MARIADBD"
	as_root start-stop-daemon --start --oknodo --background --exec "$MARIADBD" -- --user=mysql
	for ((i = 0; i < WAIT_SECONDS * 2; i++)); do
		if server_up; then
			break
		fi
		sleep 0.5
	done
	server_up || die "mariadbd did not answer within ${WAIT_SECONDS}s (see /var/log/mysql/error.log)"
fi

if ! tcp_ok; then
	# A fresh Debian install authenticates root@localhost by unix_socket
	# only. Keep that and also accept an empty password.
	log "allowing root to log in over TCP with an empty password"
	socket_sql "ALTER USER root@localhost IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket; FLUSH PRIVILEGES;" ||
		die "could not change root's authentication over $SOCKET"
fi

if ! tcp_ok; then
	# With skip-name-resolve a TCP login from 127.0.0.1 does not match
	# root@localhost: give root@127.0.0.1 the same rights.
	log "adding root@127.0.0.1 with an empty password (skip-name-resolve is on?)"
	socket_sql "CREATE USER IF NOT EXISTS root@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD(''); GRANT ALL PRIVILEGES ON *.* TO root@'127.0.0.1' WITH GRANT OPTION; FLUSH PRIVILEGES;" ||
		die "could not create root@127.0.0.1 over $SOCKET"
fi

if ! tcp_ok; then
	skip="$(socket_sql 'SELECT @@skip_networking' 2>/dev/null || echo '?')"
	bind="$(socket_sql 'SELECT CONCAT(@@bind_address, ":", @@port)' 2>/dev/null || echo '?')"
	die "root cannot log in over TCP at $HOST:$PORT (skip_networking=$skip, listening on $bind); check bind-address/port/skip-networking in /etc/mysql"
fi
check_listening
