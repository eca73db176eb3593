#!/bin/bash
# Entrypoint of the local/mariadb image (built by scripts/container-images.sh
# from Debian's mariadb-server package). It honours the environment variables
# of the official mariadb and mysql images that orderflow-audit and
# testcontainers-go's mysql module set, each MARIADB_* name before its
# MYSQL_* alias:
#
#   MARIADB_ROOT_PASSWORD / MYSQL_ROOT_PASSWORD          root's password (root@'%' and root@localhost)
#   MARIADB_ALLOW_EMPTY_ROOT_PASSWORD / MYSQL_ALLOW_EMPTY_PASSWORD
#                                                        any non-empty value: root without a password
#   MARIADB_DATABASE / MYSQL_DATABASE                    a database to create
#   MARIADB_USER / MYSQL_USER, MARIADB_PASSWORD / MYSQL_PASSWORD
#                                                        an account with every privilege on that database
#
# Arguments that start with "-" are passed to mariadbd (as the official
# images do: `docker run local/mariadb:10.11 --log-bin ...`); any other first
# argument is run as a command instead.
#
# The data directory was made when the image was built (mariadb-install-db),
# so a container is ready in well under a second: the accounts are set by an
# --init-file that mariadbd runs before it accepts connections. The server
# listens on every interface of the container (Debian's configuration binds
# 127.0.0.1 only, which a published port cannot reach).
set -euo pipefail

if [ "$#" -gt 0 ] && [ "${1#-}" = "$1" ]; then
	exec "$@"
fi

env_or() { # env_or NAME ALIAS: the value of $NAME, else of $ALIAS, else empty
	local v="${!1:-}"
	[ -n "$v" ] || v="${!2:-}"
	printf '%s' "$v"
}

# sql_string quotes a value as an SQL string literal.
sql_string() {
	local s="${1//\\/\\\\}"
	printf "'%s'" "${s//\'/\\\'}"
}

# sql_ident quotes a name as an SQL identifier.
sql_ident() { printf '`%s`' "${1//\`/\`\`}"; }

root_password="$(env_or MARIADB_ROOT_PASSWORD MYSQL_ROOT_PASSWORD)"
allow_empty="$(env_or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD MYSQL_ALLOW_EMPTY_PASSWORD)"
database="$(env_or MARIADB_DATABASE MYSQL_DATABASE)"
user="$(env_or MARIADB_USER MYSQL_USER)"
password="$(env_or MARIADB_PASSWORD MYSQL_PASSWORD)"

if [ -z "$root_password" ] && [ -z "$allow_empty" ]; then
	echo "local/mariadb: set MARIADB_ROOT_PASSWORD (or MYSQL_ROOT_PASSWORD), or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1 (or MYSQL_ALLOW_EMPTY_PASSWORD=yes)" >&2
	exit 1
fi

init=/run/mysqld/init.sql
mkdir -p /run/mysqld
chown mysql:mysql /run/mysqld
{
	echo "CREATE USER IF NOT EXISTS 'root'@'%';"
	echo "ALTER USER 'root'@'%' IDENTIFIED BY $(sql_string "$root_password");"
	echo "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;"
	echo "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD($(sql_string "$root_password")) OR unix_socket;"
	if [ -n "$database" ]; then
		echo "CREATE DATABASE IF NOT EXISTS $(sql_ident "$database");"
	fi
	if [ -n "$user" ] && [ "$user" != root ]; then
		echo "CREATE USER IF NOT EXISTS $(sql_string "$user")@'%' IDENTIFIED BY $(sql_string "$password");"
		if [ -n "$database" ]; then
			echo "GRANT ALL PRIVILEGES ON $(sql_ident "$database").* TO $(sql_string "$user")@'%';"
		fi
	fi
	echo "FLUSH PRIVILEGES;"
} >"$init"
chown mysql:mysql "$init"
chmod 600 "$init"

exec mariadbd --user=mysql --bind-address=0.0.0.0 --skip-name-resolve --init-file="$init" "$@"
