#!/bin/sh
# The README's run command, in the dial-out form (docs/sidecar.md,
# "Dialling out"): installs what is missing, builds, starts a gateway on
# 127.0.0.1 with no instance configured (--link-listen on a unix
# socket) and a sidecar that dials it (--dial) with an instance
# credential, creates a session running a shell, and prints how to
# attach. Ctrl-C stops both daemons.
#
# Every key is made afresh in the state directory on each run: the
# client-token pair (signing.pem, verify.pem), the provisioning pair
# (link.pem, link.pub) and the instance credential minted from it
# (instance.token, --audience ptygate-link). Logs stay there too, with
# the client token the printed lines read (client.token) and the daemons'
# process ids (gateway.pid, sidecar.pid) while they run. Nothing is left
# anywhere else; the link socket goes when the daemons stop.
#
# Exits 0 when stopped with Ctrl-C (or SIGTERM), non-zero on any failure:
# a build that fails, a daemon that does not come up (a busy port), a
# daemon that exits on its own.
#
# Environment: PTYGATE_PORT (default 8080), PTYGATE_INSTANCE (local),
# PTYGATE_STATE (${XDG_STATE_HOME:-$HOME/.local/state}/ptygate-run),
# PTYGATE_BUILD (the build directory, build-release).
set -eu
cd "$(dirname "$0")/.."

port=${PTYGATE_PORT:-8080}
instance=${PTYGATE_INSTANCE:-local}
state=${PTYGATE_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/ptygate-run}
build=${PTYGATE_BUILD:-build-release}
mkdir -p "$state"
chmod 0700 "$state"

./scripts/install-deps.sh >/dev/null
# The page first: configuring without web/dist warns that the install
# would lack it.
./scripts/build-web.sh >/dev/null
web=$PWD/web/dist
# A build directory configured already keeps its build type (an ASan
# build stays one).
if [ -f "$build/CMakeCache.txt" ]; then
	cmake -S . -B "$build" >/dev/null
else
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" \
	--target ptygate-sidecar ptygate-gateway ptygate >/dev/null
bin=$(cd "$build" && pwd)

sidecar_pid=""
gateway_pid=""
# stop STATUS: stops what runs, removes the socket and the pid files,
# exits STATUS (0 for Ctrl-C, the failure's status otherwise).
stop() {
	status=$1
	trap - INT TERM EXIT
	set +e
	if [ -n "$gateway_pid$sidecar_pid" ]; then
		echo
		echo "stopping gateway and sidecar..."
	fi
	for pid in $gateway_pid $sidecar_pid; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	rm -f "$state/links.sock" "$state/gateway.pid" "$state/sidecar.pid"
	if [ "$status" -eq 0 ]; then
		echo "stopped; logs and keys are in $state"
	else
		echo "run-local: failed (status $status); logs are in $state" >&2
	fi
	exit "$status"
}
trap 'stop $?' EXIT
trap 'stop 0' INT TERM

rm -f "$state/signing.pem" "$state/verify.pem" "$state/link.pem" "$state/link.pub" \
	"$state/instance.token" "$state/links.sock"
"$bin/ptygate" token keygen --out-private "$state/signing.pem" --out-public "$state/verify.pem"
"$bin/ptygate" token keygen --out-private "$state/link.pem" --out-public "$state/link.pub"
(umask 077 && "$bin/ptygate" token mint --audience ptygate-link --instance "$instance" \
	--ed25519-key "$state/link.pem" --kid local --ttl 12h >"$state/instance.token")

"$bin/ptygate-gateway" --listen "127.0.0.1:$port" \
	--link-listen "unix:$state/links.sock" --link-key "local=$state/link.pub" \
	--ed25519-public-key "$state/verify.pem" --static-dir "$web" >"$state/gateway.log" 2>&1 &
gateway_pid=$!
echo "$gateway_pid" >"$state/gateway.pid"
"$bin/ptygate-sidecar" --dial "unix:$state/links.sock" \
	--instance-token-file "$state/instance.token" >"$state/sidecar.log" 2>&1 &
sidecar_pid=$!
echo "$sidecar_pid" >"$state/sidecar.pid"

# Ready when the gateway's /readyz shows the instance up: the sidecar has
# dialled in, its credential was verified and the link said hello.
i=0
until curl -fs -m 2 "http://127.0.0.1:$port/readyz" 2>/dev/null |
	grep -q "\"$instance\": *\"up\""; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 "$gateway_pid" 2>/dev/null ||
		! kill -0 "$sidecar_pid" 2>/dev/null; then
		if ! kill -0 "$gateway_pid" 2>/dev/null; then
			echo "the gateway exited at start (is port $port busy?)" >&2
		else
			echo "the instance did not come up" >&2
		fi
		echo "see $state/gateway.log and $state/sidecar.log" >&2
		tail -5 "$state/gateway.log" "$state/sidecar.log" >&2 || true
		exit 1
	fi
	sleep 0.1
done

token=$("$bin/ptygate" token mint --ed25519-key "$state/signing.pem" --sub "${USER:-user}-local" \
	--instance "$instance" --scope "pty:control sessions tasks" --ttl 12h)
(umask 077 && printf '%s\n' "$token" >"$state/client.token")
export PTYGATE_GATEWAY="http://127.0.0.1:$port" PTYGATE_INSTANCE="$instance" PTYGATE_TOKEN="$token"
session=$("$bin/ptygate" sessions create --quiet --label "run-local" -- "${SHELL:-/bin/sh}")

cat <<EOT

ptygate is running (state in $state).

  session:  $session
  token:    $token

REST (the token is in $state/client.token):
  curl -H "Authorization: Bearer \$(cat '$state/client.token')" http://127.0.0.1:$port/agents/$instance/sessions/$session

Open in a browser (the token rides in the fragment, which is never sent to a server):
  http://127.0.0.1:$port/agents/$instance/sessions/$session/#token=$token

Attach from a terminal (Ctrl-] detaches):
  PTYGATE_TOKEN=$token $bin/ptygate attach --gateway http://127.0.0.1:$port --instance $instance --session $session

WebSocket endpoint (subprotocol pty-ws.v1, Authorization: Bearer <token>):
  ws://127.0.0.1:$port/agents/$instance/sessions/$session/attach

Press Ctrl-C to stop.
EOT
# A daemon that exits on its own is a failure: the gateway's status, or 1.
set +e
wait "$gateway_pid"
rc=$?
gateway_pid=""
echo "the gateway exited (status $rc); see $state/gateway.log" >&2
[ "$rc" -ne 0 ] || rc=1
exit "$rc"
