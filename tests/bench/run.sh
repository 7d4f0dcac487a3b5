#!/bin/sh
# The benchmark suite in one command: builds the release
# configuration (RelWithDebInfo, as shipped), then runs tests/bench/run.py,
# which starts a real sidecar (unix link) and gateway (loopback), runs
# every benchmark with its baseline paired in the same invocation and
# prints one table. Never fails on the numbers; not part of ctest.
#
#   tests/bench/run.sh [--runs N] [--mib M] [--only attach,echo,...] [--quick] [--verbose]
set -eu
cd "$(dirname "$0")/../.."
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-release -j2 --target ptygate-sidecar ptygate-gateway ptygate bench_client bench_gen bench_onehop \
	>/dev/null
exec /usr/bin/python3 tests/bench/run.py "$@"
