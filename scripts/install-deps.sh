#!/bin/sh
# Installs every package ptygate needs to build, run and test, from
# Debian's archive. Idempotent; needs root (or sudo).
set -eu

# stress-ng keeps the cores busy while the tests run, to show that none of
# them depends on how the machine schedules it (docs/testing.md, "Tests under load");
# strace holds a daemon inside a system call where a test needs it there.
PACKAGES="
  build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
  libvterm-dev libprotobuf-c-dev protobuf-c-compiler
  libsodium-dev libjansson-dev libcmocka-dev libmicrohttpd-dev
  libwslay-dev zlib1g-dev libdeflate-dev nettle-dev libgnutls28-dev openssl
  python3 python3-websockets python3-jsonschema python3-pyflakes
  valgrind procps util-linux iproute2 curl libcurl4-openssl-dev nginx-light
  libgnutls28-dev nodejs node-ws chromium
  man-db dpkg-dev systemd
  stress-ng strace
  tmux zsh
  etcd-server etcd-client
  haproxy
"
# etcd-server, etcd-client: the fleet registry's tests run a three-member
# etcd cluster on loopback ports (libcurl4-openssl-dev: the gateway's
# client of etcd's JSON gateway).
# python3-pyflakes: the test command checks the tests' and scripts'
# Python for unused and undefined names.
# haproxy: e2e.fleet_lb runs deploy/haproxy/ptygate.cfg in front of three
# gateways.
# node-ws: a second permessage-deflate client for e2e.deflate (Node's ws).
# man-db: e2e.cli_manpage renders ptygate(1) with `man --warnings -l`.
# systemd: systemd-analyze verify and security check the units in
# tests/packaging (the machine need not boot with systemd); util-linux's
# setpriv runs their commands as the units would.
# The web page's build (scripts/build-web.sh) runs npm; Debian ships it
# apart from nodejs, while other nodejs builds bundle it.
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"

missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && { echo "install-deps: all packages present"; exit 0; }

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing:$missing"
$SUDO apt-get update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
