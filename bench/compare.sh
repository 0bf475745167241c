#!/usr/bin/env bash
# compare.sh OLD [NEW] [ROUNDS]: the figures issue 28 asks not to lose,
# measured at two revisions side by side. It builds the benchmark binaries of
# both (the peer benchmarks against eino, the engine's, events against raw
# nats.go) and runs them in alternation, ROUNDS times (3), so that the
# machine's noise hits both alike. NEW defaults to the working tree.
#
#   bench/compare.sh 8972922            # that commit against the working tree
#
# Each output line is tagged with its revision; compare the ratio columns
# (toolstream/eino, toolstream/raw), not absolute times.
set -euo pipefail
old=${1:?usage: compare.sh OLD [NEW] [ROUNDS]}
new=${2:-}
rounds=${3:-3}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/old" >/dev/null 2>&1 || true; [ -n "$new" ] && git -C "$root" worktree remove --force "$work/new" >/dev/null 2>&1; rm -rf "$work"' EXIT

git -C "$root" worktree add -q --detach "$work/old" "$old"
if [ -n "$new" ]; then
	git -C "$root" worktree add -q --detach "$work/new" "$new"
	newdir=$work/new
else
	newdir=$root
fi

build() { # build DIR TAG
	(cd "$1/bench" && GOWORK=off go test -c -o "$work/$2-peer.test" .)
	(cd "$1" && go test -c -o "$work/$2-toolkit.test" ./toolkit)
	(cd "$1" && go test -c -o "$work/$2-natsbus.test" ./events/natsbus)
}
build "$work/old" old
build "$newdir" new

run() { # run TAG: each binary in its package's folder, as go test runs it
	local t=$1 dir=$work/old
	[ "$t" = new ] && dir=$newdir
	cd "$dir/bench"
	"$work/$t-peer.test" -test.run '^$' -test.bench 'BatchVsEino' -test.benchtime 2000x | sed "s/^/$t /" | grep Benchmark
	"$work/$t-peer.test" -test.run '^$' -test.bench 'ConcurrentSessions' -test.benchtime 2s | sed "s/^/$t /" | grep Benchmark
	cd "$dir/toolkit"
	"$work/$t-toolkit.test" -test.run '^$' -test.bench 'Run/noop-(1|8|64)$|EngineOverhead|InterceptorChain' -test.benchtime 20000x | sed "s/^/$t /" | grep Benchmark
	cd "$dir/events/natsbus"
	"$work/$t-natsbus.test" -test.run '^$' -test.bench 'EventsVsRaw' -test.benchtime 20x | sed "s/^/$t /" | grep Benchmark
}
for i in $(seq "$rounds"); do
	echo "# round $i (load: $(cut -d' ' -f1-3 /proc/loadavg))"
	if [ $((i % 2)) -eq 1 ]; then run old; run new; else run new; run old; fi
done
