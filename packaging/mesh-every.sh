#!/bin/sh
# mesh-every: run a command now, then again INTERVAL after each run ends, until told to
# stop. OpenRC has no timers: its mesh-reconcile and mesh-reconcile-watch services run this under
# supervise-daemon, which starts it at boot, restarts it if it dies, and stops it with SIGTERM.
#
#   mesh-every INTERVAL COMMAND [ARG...]
#
# INTERVAL carries its unit, as every mesh duration does: 90s, 15m, 1h, 2d (whole numbers). A
# bare number is refused, naming the form it meant ("900" was seconds: "900s").
#
# Each run's end is said on stderr with its exit status ("exit 0", "exit 5", ...): the command's
# own status is its verdict (drift, late, down) and is not this loop's failure, so the loop goes
# on. SIGTERM or SIGINT stops it: a run in progress is sent SIGTERM and waited for, then it exits 0.
# Exit 2: bad usage.
set -u

usage() {
	echo "mesh-every: $1 (usage: mesh-every INTERVAL COMMAND [ARG...], INTERVAL e.g. 90s, 15m, 1h, 2d)" >&2
	exit 2
}

[ $# -ge 2 ] || usage "name an interval and a command"
interval=$1
shift
given=$interval
case $interval in
'' | *[!0-9smhd]* | [!0-9]*) usage "interval must be a whole number with its unit (s, m, h, d), not \"$given\"" ;;
*[!0-9]) ;;
*) usage "interval \"$given\" carries no unit: a duration carries its unit, e.g. \"${given}s\"" ;;
esac
number=${interval%?}
case $number in
'' | *[!0-9]*) usage "interval must be a whole number with its unit (s, m, h, d), not \"$given\"" ;;
esac
case $interval in
*s) interval=$number ;;
*m) interval=$((number * 60)) ;;
*h) interval=$((number * 3600)) ;;
*d) interval=$((number * 86400)) ;;
esac
[ "$interval" -ge 1 ] || usage "interval must be at least 1s, not \"$given\""

child=
stop() {
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null
		wait "$child"
	fi
	echo "mesh-every: stopped" >&2
	exit 0
}
trap stop TERM INT

while :; do
	# In the background and waited for, so that a signal interrupts the wait at once.
	"$@" &
	child=$!
	wait "$child"
	status=$?
	child=
	echo "mesh-every: $1 exit $status; next run in ${given}" >&2
	sleep "$interval" &
	child=$!
	wait "$child"
	child=
done
