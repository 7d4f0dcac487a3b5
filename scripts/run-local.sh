#!/bin/sh
# The README's run command: installs what is missing, builds, starts a
# sidecar on a unix socket and a gateway on 127.0.0.1 with a freshly
# generated Ed25519 key, creates a session running a shell, and prints how
# to attach. Ctrl-C stops both daemons.
#
# Environment: PTYGATE_PORT (default 8080), PTYGATE_INSTANCE (local),
# PTYGATE_STATE (a fresh temporary directory).
set -eu
cd "$(dirname "$0")/.."

port=${PTYGATE_PORT:-8080}
instance=${PTYGATE_INSTANCE:-local}
state=${PTYGATE_STATE:-$(mktemp -d /tmp/ptygate-run.XXXXXX)}
mkdir -p "$state"

./scripts/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-release -j "$(nproc 2>/dev/null || echo 2)" \
	--target ptygate-sidecar ptygate-gateway ptygate >/dev/null
bin=$PWD/build-release
./scripts/build-web.sh >/dev/null
web=$PWD/web/dist

sidecar_pid=""
gateway_pid=""
stop() {
	trap - INT TERM EXIT
	set +e
	echo
	echo "stopping gateway and sidecar..."
	for pid in $gateway_pid $sidecar_pid; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	echo "stopped; logs and keys are in $state"
	exit 0
}
trap stop INT TERM EXIT

rm -f "$state/signing.pem" "$state/verify.pem"
"$bin/ptygate" token keygen --out-private "$state/signing.pem" --out-public "$state/verify.pem"

"$bin/ptygate-sidecar" --listen "unix:$state/sidecar.sock" --instance-id "$instance" \
	>"$state/sidecar.log" 2>&1 &
sidecar_pid=$!
"$bin/ptygate-gateway" --listen "127.0.0.1:$port" \
	--instance "$instance=unix:$state/sidecar.sock" \
	--ed25519-public-key "$state/verify.pem" --static-dir "$web" >"$state/gateway.log" 2>&1 &
gateway_pid=$!

# Ready when the gateway answers /readyz (its link to the sidecar is up).
i=0
until curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 "$gateway_pid" 2>/dev/null; then
		echo "the gateway did not become ready; see $state/gateway.log" >&2
		tail -5 "$state/gateway.log" >&2 || true
		exit 1
	fi
	sleep 0.1
done

token=$("$bin/ptygate" token mint --ed25519-key "$state/signing.pem" --sub "${USER:-user}-local" \
	--instance "$instance" --scope "pty:control sessions tasks" --ttl 12h)
export PTYGATE_GATEWAY="http://127.0.0.1:$port" PTYGATE_INSTANCE="$instance" PTYGATE_TOKEN="$token"
session=$("$bin/ptygate" sessions create --quiet --label "run-local" -- "${SHELL:-/bin/sh}")

cat <<EOT

ptygate is running (state in $state).

  session:  $session
  token:    $token

REST:
  curl -H "Authorization: Bearer \$PTYGATE_TOKEN" http://127.0.0.1:$port/agents/$instance/sessions/$session

Open in a browser (the token rides in the fragment, which is never sent to a server):
  http://127.0.0.1:$port/agents/$instance/sessions/$session/#token=$token

Attach from a terminal (Ctrl-] detaches):
  PTYGATE_TOKEN=$token $bin/ptygate attach --gateway http://127.0.0.1:$port --instance $instance --session $session

WebSocket endpoint (subprotocol pty-ws.v1, Authorization: Bearer <token>):
  ws://127.0.0.1:$port/agents/$instance/sessions/$session/attach

Press Ctrl-C to stop.
EOT
wait "$gateway_pid"
