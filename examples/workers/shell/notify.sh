#!/bin/sh
# notify@1 of the order workflow, for `jetflow worker exec`:
#
#   jetflow worker exec --task notify@1 -- sh examples/workers/shell/notify.sh
#
# The invocation arrives as one JSON object on stdin (docs/PROTOCOL.md
# section 10); the output is one JSON value on stdout; logs go to stderr.
# A non-zero exit fails the attempt with code EXIT_<status>.
set -eu

request=$(cat)

# Plain sh has no JSON parser: read the fields with jq when it is there,
# else with sed, which is enough for the flat strings used here.
field() {
	if command -v jq >/dev/null 2>&1; then
		printf '%s' "$request" | jq -r "$1 // empty"
	else
		printf '%s' "$request" | sed -n "s/.*$2.*/\\1/p"
	fi
}
tracking=$(field '.input.tracking' '"input":{[^}]*"tracking":"\([^"\\]*\)"')
key=$(field '.idempotencyKey' '"idempotencyKey":"\(\(\\.\|[^"\\]\)*\)"')

if [ -z "$tracking" ]; then
	echo "notify: the input has no tracking number" >&2
	exit 3
fi
case $tracking in
*[!A-Za-z0-9_-]*)
	echo "notify: tracking number '$tracking' has characters other than letters, digits, '_' and '-'" >&2
	exit 3
	;;
esac

# A real notifier would pass $key to the mail service, which then sends
# one mail however often this attempt is retried or redelivered.
echo "notify: mailing tracking number $tracking (idempotency key $key)" >&2
printf '{"notified":true,"tracking":"%s","channel":"sh"}\n' "$tracking"
