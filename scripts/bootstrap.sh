#!/bin/sh
# Prepares a fresh Debian machine (root, Node and npm present) for mesh: Deno 2.9.x from npm,
# the Debian packages the tests and the demo use, and the services they need (PostgreSQL,
# RabbitMQ and its management plugin, started and enabled when they are not).
# Safe to run again: it installs only what is missing. Prints what it does on stderr.
set -eu

DENO_VERSION=2.9.6
PACKAGES="podman runc uidmap caddy restic busybox-static openssl ca-certificates git iproute2 procps docker.io time debootstrap docker-registry pacman-package-manager nftables chromium qemu-user-static binutils xz-utils patchelf"

say() { printf 'bootstrap: %s\n' "$*" >&2; }

# Runs the command until it succeeds, once a second, at most LIMIT times; else says WHAT and
# stops: wait_for LIMIT WHAT COMMAND...
wait_for() {
	limit=$1 what=$2
	shift 2
	n=0
	until "$@" >/dev/null 2>&1; do
		n=$((n + 1))
		if [ "$n" -gt "$limit" ]; then
			say "$what"
			exit 1
		fi
		sleep 1
	done
}

# Starts RabbitMQ and waits for it: `rabbitmqctl await_startup` fails at once ("node 'rabbit' not
# running at all") until the new node has registered with epmd, so wait for that first.
start_rabbit() {
	rabbitmq-server -detached >&2
	wait_for 120 "RabbitMQ did not start within 120 s (its log: /var/log/rabbitmq/)" \
		rabbitmqctl -q ping
	timeout 120 rabbitmqctl -q await_startup >&2
}

if [ "$(id -u)" != 0 ]; then
	say "must run as root (it installs Debian packages)"
	exit 1
fi

# Deno, from the npm registry (no other download source is reachable from these machines).
case "$(deno --version 2>/dev/null | head -n 1)" in
"deno 2.9."*) ;;
*)
	say "installing deno@$DENO_VERSION from npm"
	npm install -g "deno@$DENO_VERSION" >&2
	if ! deno --version >/dev/null 2>&1; then
		# npm may skip the package's install script; it only links the platform binary.
		node "$(npm root -g)/deno/install.cjs" >&2
	fi
	deno --version >&2
	;;
esac

missing=""
for p in $PACKAGES; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	say "installing Debian packages:$missing"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
fi

# The services the control-plane tests talk to (docs/testing.md): PostgreSQL on 127.0.0.1:5432
# with trust authentication for local TCP connections, and RabbitMQ on 127.0.0.1:5672 (guest) with
# its management API on 15672. Installed from Debian's packages when missing.
services=""
command -v pg_ctlcluster >/dev/null 2>&1 || services="$services postgresql"
command -v rabbitmq-server >/dev/null 2>&1 || services="$services rabbitmq-server"
command -v curl >/dev/null 2>&1 || services="$services curl"
if [ -n "$services" ]; then
	say "installing the services the tests need:$services"
	apt-get update -qq >&2
	# Where systemd is not init the packages cannot start their services; they are started
	# below either way.
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $services >&2
fi
cluster_version=$(ls /etc/postgresql 2>/dev/null | sort -n | tail -n 1)
if [ -z "$cluster_version" ]; then
	say "PostgreSQL is installed but has no cluster under /etc/postgresql"
	exit 1
fi
hba=/etc/postgresql/$cluster_version/main/pg_hba.conf
# The suite connects as postgres over TCP without a password.
if ! grep -Eq '^host[[:space:]]+all[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' "$hba"; then
	say "allowing trust authentication from 127.0.0.1 in $hba"
	tmp="$hba.mesh-tmp"
	{ printf '# added by mesh scripts/bootstrap.sh: the test suite connects over loopback\n'
	  printf 'host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n'
	  cat "$hba"; } > "$tmp"
	chown --reference="$hba" "$tmp" && chmod --reference="$hba" "$tmp" && mv "$tmp" "$hba"
	if pg_isready -q -h 127.0.0.1 -p 5432; then
		pg_ctlcluster --skip-systemctl-redirect "$cluster_version" main reload >&2
	fi
fi
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
	say "starting PostgreSQL"
	pg_ctlcluster --skip-systemctl-redirect "$cluster_version" main start >&2
fi
# RabbitMQ's file handles: Debian's wrapper starts it through su, with the session's soft limit
# (1,024 here); a broker holding more durable queues than handles hangs at start recovering them
# (seen with a bench's 1,000 node queues left behind). Its scripts source rabbitmq-env.conf (sh).
env_conf=/etc/rabbitmq/rabbitmq-env.conf
if ! grep -q '^ulimit -n' "$env_conf" 2>/dev/null; then
	echo 'ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"' >>"$env_conf"
fi
# A broker started before that line was there (or by something else) keeps its old limit until it
# restarts: ~830 sockets, fewer than a fleet of 1,000 nodes' connections (bench/fleet_bench.ts).
if rabbitmqctl -q status >/dev/null 2>&1; then
	handles=$(rabbitmqctl -q eval 'file_handle_cache:get_limit().' 2>/dev/null || echo 0)
	case $handles in *[!0-9]* | '') handles=0 ;; esac
	if [ "$handles" -lt 10000 ]; then
		say "restarting RabbitMQ: it was started with $handles file handles, fewer than 10,000"
		rabbitmqctl -q stop >&2 || true
		start_rabbit
	fi
else
	say "starting RabbitMQ"
	start_rabbit
fi
if ! rabbitmq-plugins -q is_enabled rabbitmq_management >/dev/null 2>&1; then
	say "enabling RabbitMQ's management plugin"
	rabbitmq-plugins -q enable rabbitmq_management >&2
fi
wait_for 60 "RabbitMQ's management API on 127.0.0.1:15672 does not answer" \
	curl -sf -u guest:guest http://127.0.0.1:15672/api/overview
pg_isready -q -h 127.0.0.1 -p 5432 || {
	say "PostgreSQL on 127.0.0.1:5432 does not answer"
	exit 1
}

# TLS for the tests of trust on the wire (docs/testing.md, "TLS"): a test CA made by the mesh's own
# CA library (scripts/test_tls.ts) under /etc/mesh-test, RabbitMQ's AMQPS listener on
# 127.0.0.1:5671 and its management API over HTTPS on 127.0.0.1:15671, and PostgreSQL with
# ssl = on; the plain listeners above stay as they are. The certificates are made again only when
# missing or due; the listeners then read them again (RabbitMQ restarts only when its TLS
# listeners are first configured).
TLS_DIR=/etc/mesh-test
here=$(cd "$(dirname "$0")/.." && pwd)
tls_state=$(cd "$here" && deno run -A --quiet scripts/test_tls.ts "$TLS_DIR")
chown -R rabbitmq:rabbitmq "$TLS_DIR/rabbitmq"
chown -R postgres:postgres "$TLS_DIR/postgresql"
chmod 0755 "$TLS_DIR" "$TLS_DIR/rabbitmq" "$TLS_DIR/postgresql"
chmod 0644 "$TLS_DIR/ca.crt" "$TLS_DIR/rabbitmq/server.crt" "$TLS_DIR/postgresql/server.crt"
chmod 0600 "$TLS_DIR/secrets/ca.key" "$TLS_DIR/rabbitmq/server.key" "$TLS_DIR/postgresql/server.key"
rabbit_conf=/etc/rabbitmq/rabbitmq.conf
if ! grep -q '^listeners.ssl.local' "$rabbit_conf" 2>/dev/null; then
	say "configuring RabbitMQ's TLS listeners (5671, management 15671) and restarting it"
	cat >> "$rabbit_conf" <<EOF_RABBIT
# mesh-test TLS (scripts/bootstrap.sh): AMQPS and management HTTPS with the test CA's certificate
listeners.ssl.local = 127.0.0.1:5671
ssl_options.cacertfile = $TLS_DIR/ca.crt
ssl_options.certfile = $TLS_DIR/rabbitmq/server.crt
ssl_options.keyfile = $TLS_DIR/rabbitmq/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
management.tcp.port = 15672
management.ssl.port = 15671
management.ssl.ip = 127.0.0.1
management.ssl.cacertfile = $TLS_DIR/ca.crt
management.ssl.certfile = $TLS_DIR/rabbitmq/server.crt
management.ssl.keyfile = $TLS_DIR/rabbitmq/server.key
EOF_RABBIT
	rabbitmqctl -q stop >&2 || true
	start_rabbit
elif [ "$tls_state" = changed ]; then
	say "RabbitMQ reads its new certificates"
	rabbitmqctl -q eval 'ssl:clear_pem_cache().' >/dev/null
fi
pg_tls=/etc/postgresql/$cluster_version/main/conf.d/91-mesh-test-tls.conf
if [ ! -f "$pg_tls" ] || [ "$tls_state" = changed ]; then
	say "PostgreSQL: ssl = on with the test CA's certificate"
	mkdir -p "$(dirname "$pg_tls")"
	{ printf '# added by mesh scripts/bootstrap.sh: TLS with the test CA'"'"'s certificate (docs/testing.md)\n'
	  printf "ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\n" \
		"$TLS_DIR/postgresql/server.crt" "$TLS_DIR/postgresql/server.key"; } > "$pg_tls"
	pg_ctlcluster --skip-systemctl-redirect "$cluster_version" main reload >&2
fi
i=0
until curl -sf --cacert "$TLS_DIR/ca.crt" -u guest:guest https://127.0.0.1:15671/api/overview >/dev/null &&
	psql -Atq "host=127.0.0.1 user=postgres dbname=postgres sslmode=verify-full sslrootcert=$TLS_DIR/ca.crt" -c 'select 1' >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -gt 60 ]; then
		say "the TLS listeners (RabbitMQ management 15671, PostgreSQL ssl) do not answer with the test CA's certificate"
		exit 1
	fi
	sleep 1
done

# Caddy's package starts a server on :80 where systemd runs; the tests start their own Caddy
# on free ports, so nothing else is needed here.
say "ready: $(deno --version | head -n 1), podman $(podman --version | cut -d' ' -f3), caddy $(caddy version | cut -d' ' -f1)"
