#!/usr/bin/env bash
# container-images.sh prepares a machine without a registry for the
# container modes of `orderflow-audit run` (--db container:IMAGE,
# --kafka container:IMAGE) and builds the two images they are tested with:
#
#  1. Installs Debian's docker.io and debootstrap with apt-get when missing.
#  2. Starts dockerd in the background when no engine answers (its log goes
#     to $DOCKERD_LOG), and waits for it, bounded; if the default storage
#     driver cannot start, it tries vfs.
#  3. Builds local/mariadb:10.11: a minimal Debian bookworm (debootstrap
#     --variant=minbase) with Debian's mariadb-server, a data directory made
#     at build time and an entrypoint (container-images/mariadb-entrypoint.sh)
#     that honours the usual MARIADB_*/MYSQL_* variables of the official
#     images and passes "-..." arguments to mariadbd.
#  4. Builds local/broker: the orderflow-audit binary (static) running
#     `orderflow-audit broker`, i.e. franz-go's kfake, NOT Apache Kafka; its
#     labels say so and the evidence of a run records it as kfake.
#
# Each image carries the content key it was built from (label
# org.orderflow-audit.key): its recipe (build_mariadb below, the suite and
# the entrypoint) for local/mariadb, the binary's sha256 for local/broker. An image whose key matches is kept, so a second run
# on the same machine builds nothing. Every step is bounded by `timeout`.
#
# Run as root (or with sudo) on a disposable Debian/Ubuntu development or CI
# machine. Prints the images with their ids at the end.
set -euo pipefail

export PATH="/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DOCKERD_LOG="${DOCKERD_LOG:-/var/log/orderflow-dockerd.log}"
DOCKERD_WAIT="${DOCKERD_WAIT:-60}"
MARIADB_IMAGE="${MARIADB_IMAGE:-local/mariadb:10.11}"
BROKER_IMAGE="${BROKER_IMAGE:-local/broker}"
SUITE=bookworm

log() { printf 'container-images: %s\n' "$*" >&2; }
die() { printf 'container-images: error: %s\n' "$*" >&2; exit 1; }

# as_root runs a command as root (directly, or through sudo).
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. the packages
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install ${need[*]} yourself"
	log "installing ${need[*]} with apt-get"
	as_root timeout 600 apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# 2. the engine
engine_up() { timeout 10 docker info >/dev/null 2>&1; }

start_dockerd() { # start_dockerd [dockerd options...]: starts it in the background and waits for it
	log "starting dockerd $* (log: $DOCKERD_LOG)"
	as_root mkdir -p "$(dirname "$DOCKERD_LOG")"
	# setsid: the daemon outlives this script (and its process group).
	as_root setsid dockerd "$@" >>"$DOCKERD_LOG" 2>&1 </dev/null &
	local pid=$!
	for ((i = 0; i < DOCKERD_WAIT * 2; i++)); do
		engine_up && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	return 1
}

if engine_up; then
	log "a container engine answers: $(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?')"
else
	if ! start_dockerd; then
		log "dockerd did not come up with its default storage driver; trying vfs (last lines of $DOCKERD_LOG:)"
		tail -n 5 "$DOCKERD_LOG" >&2 || true
		as_root pkill -x dockerd 2>/dev/null || true # only a dockerd of ours can be there: none answered
		sleep 1
		start_dockerd --storage-driver=vfs || die "dockerd did not answer within ${DOCKERD_WAIT}s; see $DOCKERD_LOG"
	fi
	log "dockerd $(docker version --format '{{.Server.Version}}') is up (storage driver $(docker info --format '{{.Driver}}'))"
fi

image_key() { # image_key IMAGE: the content key an image was built from, or nothing
	docker image inspect --format '{{index .Config.Labels "org.orderflow-audit.key"}}' "$1" 2>/dev/null || true
}

work="$(mktemp -d "${TMPDIR:-/tmp}/ofa-images.XXXXXX")"
cleanup() { as_root rm -rf "$work"; }
trap cleanup EXIT

# 3. local/mariadb:10.11
# build_mariadb ROOTFS KEY builds the image from a minimal Debian with
# Debian's mariadb-server. Its text is part of the image's key.
build_mariadb() {
	local root="$1" key="$2" mirror version
	mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
	mirror="${mirror:-http://deb.debian.org/debian}"
	log "building $MARIADB_IMAGE (key $key): debootstrap --variant=minbase $SUITE from $mirror"
	as_root timeout 600 debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
	# No service may start inside the chroot while packages install.
	printf '#!/bin/sh\nexit 101\n' | as_root tee "$root/usr/sbin/policy-rc.d" >/dev/null
	as_root chmod 755 "$root/usr/sbin/policy-rc.d"
	log "installing mariadb-server into the image"
	as_root chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive timeout 600 \
		apt-get install -y -qq --no-install-recommends mariadb-server >"$work/apt.log" 2>&1 ||
		{ tail -n 20 "$work/apt.log" >&2; die "apt-get install mariadb-server in the image failed"; }
	if [ ! -d "$root/var/lib/mysql/mysql" ]; then
		as_root chroot "$root" mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
	fi
	as_root install -m 755 scripts/container-images/mariadb-entrypoint.sh "$root/usr/local/bin/docker-entrypoint.sh"
	as_root rm -rf "$root/usr/sbin/policy-rc.d" "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
		"$root"/var/cache/apt/archives/*.deb "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale"
	version="$(as_root chroot "$root" mariadbd --version | awk '{print $3}')"
	as_root tar -C "$root" -c . | timeout 300 docker import \
		--change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
		--change 'CMD []' \
		--change 'EXPOSE 3306' \
		--change "LABEL org.orderflow-audit.key=$key" \
		--change "LABEL org.opencontainers.image.title=\"Debian $SUITE mariadb-server $version (built locally by orderflow-audit scripts/container-images.sh)\"" \
		- "$MARIADB_IMAGE" >/dev/null
	log "built $MARIADB_IMAGE (MariaDB $version)"
}

mariadb_key="$({ declare -f build_mariadb; echo "$SUITE"; cat scripts/container-images/mariadb-entrypoint.sh; } | sha256sum | cut -c1-16)"
if [ "$(image_key "$MARIADB_IMAGE")" = "$mariadb_key" ]; then
	log "$MARIADB_IMAGE is up to date (key $mariadb_key)"
else
	start=$SECONDS
	build_mariadb "$work/rootfs" "$mariadb_key"
	log "$MARIADB_IMAGE took $((SECONDS - start)) s"
fi

# 4. local/broker
start=$SECONDS
mkdir -p "$work/broker/tmp"
CGO_ENABLED=0 timeout 600 go build -trimpath -buildvcs=false -o "$work/broker/orderflow-audit" ./cmd/orderflow-audit
broker_key="$(sha256sum "$work/broker/orderflow-audit" | cut -c1-16)"
if [ "$(image_key "$BROKER_IMAGE")" = "$broker_key" ]; then
	log "$BROKER_IMAGE is up to date (key $broker_key)"
else
	kfake="$(go version -m "$work/broker/orderflow-audit" | awk '$2 == "github.com/twmb/franz-go/pkg/kfake" {print $3}')"
	chmod 1777 "$work/broker/tmp"
	tar -C "$work/broker" -c . | timeout 300 docker import \
		--change 'ENTRYPOINT ["/orderflow-audit", "broker"]' \
		--change 'CMD ["--listen", "0.0.0.0:9092", "--advertise", "127.0.0.1:9092"]' \
		--change 'EXPOSE 9092' \
		--change "LABEL org.orderflow-audit.key=$broker_key" \
		--change "LABEL org.orderflow-audit.broker=kfake" \
		--change "LABEL org.orderflow-audit.implementation=\"kfake $kfake (franz-go Kafka wire-protocol broker run by orderflow-audit broker, not Apache Kafka)\"" \
		- "$BROKER_IMAGE" >/dev/null
	log "built $BROKER_IMAGE (kfake $kfake) in $((SECONDS - start)) s"
fi

# Earlier builds of ours that no tag names any more (and no container uses).
docker image prune -f --filter "label=org.orderflow-audit.key" >/dev/null || true
docker image ls --format '{{.Repository}}:{{.Tag}} {{.ID}} {{.Size}}' | grep -E "^(${MARIADB_IMAGE%%:*}|$BROKER_IMAGE)[: ]" || true
