#!/bin/sh
# Prepares a fresh Debian machine (root, Node and npm present) for mesh: Deno 2.9.x from npm,
# the Debian packages the tests and the demo use, and the services they need.
# Safe to run again: it installs only what is missing. Prints what it does on stderr.
set -eu

DENO_VERSION=2.9.6
PACKAGES="podman runc uidmap caddy busybox-static openssl ca-certificates git iproute2 procps docker.io time debootstrap docker-registry pacman-package-manager"

say() { printf 'bootstrap: %s\n' "$*" >&2; }

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

# Caddy's package starts a server on :80 where systemd runs; the tests start their own Caddy
# on free ports, so nothing else is needed here.
say "ready: $(deno --version | head -n 1), podman $(podman --version | cut -d' ' -f3), caddy $(caddy version | cut -d' ' -f1)"
