#!/usr/bin/env bash
# Runs the Node.js client against the demo, for CI: installs the client's
# packages from the lockfile, starts the demo (embedded NATS on a free port,
# durable stream, a result larger than one NATS message), follows the
# session live and by replay, checks every invariant, stops the demo.
# Exits non-zero when any check fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PATH="/usr/local/go/bin:$PATH"
large="${TOOLSTREAM_LARGE_MIB:-10}"

cd "$here"
npm ci --no-audit --no-fund --loglevel=error
node --test

tmp="$(mktemp -d)"
demo=""
cleanup() {
	if [ -n "$demo" ] && kill -0 "$demo" 2>/dev/null; then
		kill -INT "$demo" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$demo" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$demo" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$root" && go build -o "$tmp/demo" ./cmd/demo)
# -once=false keeps the demo (and its stream) up after the run until it is
# interrupted, so that the replay can finish; -listen for that page.
"$tmp/demo" -dir "$root" -session node-client -nats-listen 127.0.0.1:0 -listen 127.0.0.1:0 \
	-once=false -plain -speed 4 -large-result "$large" >"$tmp/demo.log" 2>&1 &
demo=$!

url=""
for _ in $(seq 300); do
	url="$(grep -o 'NATS: nats://[0-9.:]*' "$tmp/demo.log" | head -1 | cut -c7- || true)"
	[ -n "$url" ] && break
	if ! kill -0 "$demo" 2>/dev/null; then
		echo "the demo exited before it was ready:"; cat "$tmp/demo.log"; exit 1
	fi
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "the demo did not print its NATS address within 30s:"; cat "$tmp/demo.log"; exit 1
fi

status=0
node check.mjs --url "$url" --session node-client --schema "$root/docs/events.schema.json" --expect-large || status=$?
if [ "$status" != 0 ]; then
	echo "--- the demo's output"
	tail -50 "$tmp/demo.log"
fi
exit "$status"
