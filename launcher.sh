#!/bin/sh
# launcher.sh: the supervisor init starts instead of mesh-host (docs/design.md, "The launcher
# supervises").
#
# Init is asked for one thing: run this at boot, and run it again if it exits. This script
# starts the host as a child, waits for it, and decides: a clean exit (0) is the host standing
# aside for a new binary and is started again without counting; a non-zero exit is a failure,
# counted after the wait (never before the start) in the state directory. After
# MESH_MAX_FAILURES consecutive failures the current binary is repointed, once, to the version
# that last completed a clean apply (known-good), and the counter is reset in the file and in
# this script together. With no known-good, or when the current binary already is the
# known-good one, it gives up: exits 1 so init and people see it, instead of looping.
#
# It shares no code with the host and calls none of it: a binary that cannot start cannot be
# its own recovery. POSIX sh; nothing here needs a parser.
#
# Layout and variables (README, "launcher.sh"):
#   MESH_STATE_DIR      /var/lib/mesh/host   known-good (one line, a version; the host writes it)
#                                            and failures (the counter; the host removes it when
#                                            it records known-good)
#   MESH_LIB            /usr/lib/mesh        mesh-host-<version> side by side; mesh-host is a
#                                            symlink to the current one
#   MESH_HOST_ARGS      reconcile --every 15m --state-dir "$MESH_STATE_DIR" (split on blanks)
#   MESH_MAX_FAILURES   3                    consecutive failures before rolling back (1-99)
#   MESH_RESTART_DELAY  1                    seconds between an exit and the next start (0-3600)

state_dir=${MESH_STATE_DIR:-/var/lib/mesh/host}
lib=${MESH_LIB:-/usr/lib/mesh}
max=${MESH_MAX_FAILURES:-3}
delay=${MESH_RESTART_DELAY:-1}
current="$lib/mesh-host"
# The host is told the path it was started from (MESH_EXECUTABLE, absolute), not left to find
# its own: a compiled host reads its file from the kernel with the symlink resolved, and would
# miss $current being repointed to a new version. It watches this path, following the symlink.
case $current in
/*) installed=$current ;;
*) installed=$PWD/$current ;;
esac
counter_file="$state_dir/failures"
known_file="$state_dir/known-good"

say() { printf 'mesh-launcher: %s\n' "$*" >&2; }

# A plain decimal integer without a sign or leading zero, at most $2 digits. Nothing else is
# ever given to shell arithmetic: "0x10" is hexadecimal there and "5x" is an error.
is_count() {
  case $1 in
  '' | *[!0-9]* | 0?*) return 1 ;;
  esac
  [ "${#1}" -le "$2" ]
}

if ! is_count "$max" 2 || [ "$max" -lt 1 ]; then
  say "MESH_MAX_FAILURES must be an integer from 1 to 99, not \"$max\""
  exit 2
fi
if ! is_count "$delay" 4 || [ "$delay" -gt 3600 ]; then
  say "MESH_RESTART_DELAY must be an integer from 0 to 3600 (seconds), not \"$delay\""
  exit 2
fi

if [ "${MESH_HOST_ARGS+set}" = set ]; then
  # Split on blanks on purpose: the arguments are words in one variable.
  # shellcheck disable=SC2086
  set -- $MESH_HOST_ARGS
else
  set -- reconcile --every 15m --state-dir "$state_dir"
fi

# Writes the counter: a temporary file beside it, then a rename.
write_counter() {
  if ! { printf '%s\n' "$1" >"$counter_file.tmp" && mv -f "$counter_file.tmp" "$counter_file"; }; then
    say "cannot write the failure counter $counter_file"
  fi
}

# Reads the counter into $failures. The file is untrusted: only its first line is read, and
# of it only the first field (split on blanks, never joined: "1 2" counts 1, not 12), which
# must be a plain decimal integer from 0 to $max; anything else (no field, "5x", "0x10", past
# the limit) is reported as corrupt and reset to 0.
read_counter() {
  failures=0
  [ -e "$counter_file" ] || return 0
  line=
  IFS= read -r line <"$counter_file" || [ -n "$line" ] || line=
  # shellcheck disable=SC2086
  set -f && set -- $line && set +f
  if [ "$#" -ge 1 ] && is_count "$1" 2 && [ "$1" -le "$max" ]; then
    failures=$1
  else
    say "the failure counter $counter_file is corrupt (\"$line\"); resetting it to 0"
    write_counter 0
  fi
}

# The version in known-good, if it names one: one line, one field, no slash.
known_good() {
  [ -f "$known_file" ] || return 1
  kg=
  IFS= read -r kg <"$known_file" || [ -n "$kg" ] || return 1
  case $kg in
  '' | *[!A-Za-z0-9._+-]* | .*) return 1 ;;
  esac
  printf '%s\n' "$kg"
}

# Repoints $current at the known-good binary, once; exits when it cannot help.
roll_back() {
  if ! version=$(known_good); then
    say "$failures consecutive failures and no known-good version in $known_file: giving up"
    exit 1
  fi
  target="mesh-host-$version"
  if [ ! -f "$lib/$target" ] || [ ! -x "$lib/$target" ]; then
    say "$failures consecutive failures; the known-good binary $lib/$target is missing: giving up"
    exit 1
  fi
  now=$(readlink "$current" 2>/dev/null) || now=
  if [ "${now##*/}" = "$target" ]; then
    say "$failures consecutive failures of the known-good version $version: giving up"
    exit 1
  fi
  if ! { rm -f "$current.new" && ln -s "$target" "$current.new" && mv -f "$current.new" "$current"; }; then
    say "$failures consecutive failures; cannot repoint $current to $target: giving up"
    exit 1
  fi
  say "$failures consecutive failures of ${now:-$current}: rolled back to $target"
  # The file and the variable together: the known-good version gets all its attempts.
  failures=0
  write_counter 0
}

# SIGTERM and SIGINT stop the host through this script: passed to the child, waited for, and
# then this script exits with the child's status. Exiting while the child runs would leave the
# host to be killed rather than stopped, mid-apply. SIGINT is passed on as SIGTERM, the host's
# stop signal: a non-interactive shell may start a background child with SIGINT ignored
# (busybox ash does), and a child cannot undo that.
child=
stopping=
forward() {
  stopping=$1
  if [ -n "$child" ]; then
    say "received SIG$1; passing SIGTERM to pid $child and waiting for it"
    kill -s TERM "$child" 2>/dev/null
  fi
}
trap 'forward TERM' TERM
trap 'forward INT' INT

# Waits for $child until it has really exited (a trapped signal interrupts wait).
wait_child() {
  while :; do
    wait "$child"
    status=$?
    if [ "$status" -gt 128 ] && kill -0 "$child" 2>/dev/null; then continue; fi
    break
  done
  child=
}

mkdir -p "$state_dir" 2>/dev/null
read_counter
[ "$failures" -ge "$max" ] && roll_back

while :; do
  MESH_EXECUTABLE=$installed "$current" "$@" &
  child=$!
  wait_child
  if [ -n "$stopping" ]; then
    say "the host exited with status $status after SIG$stopping; stopping"
    exit "$status"
  fi
  if [ "$status" -eq 0 ]; then
    say "the host exited cleanly (standing aside); starting it again"
  else
    # The host removes the counter when it records known-good: then the count starts over.
    [ -e "$counter_file" ] || failures=0
    failures=$((failures + 1))
    write_counter "$failures"
    say "the host exited with status $status: failure $failures of $max"
    [ "$failures" -ge "$max" ] && roll_back
  fi
  if [ "$delay" -gt 0 ]; then
    sleep "$delay" &
    child=$!
    wait_child
    if [ -n "$stopping" ]; then
      say "stopping on SIG$stopping"
      exit 0
    fi
  fi
done
