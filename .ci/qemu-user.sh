#!/usr/bin/env bash
# Runs the root package's tests as a linux/arm64 binary under qemu-user,
# with the arguments given (-test.short -test.timeout=10m when none), and
# exits with their status. Installs qemu-user-static from the release's
# backports when no qemu-aarch64-static of version 10 or later is there.
# The binary sees the host's page size; .ci/vm16k.sh runs it on a kernel
# with 16 KiB pages, and is CI's arm64 run: this script is for running the
# arm64 tests by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/debian.sh

need_qemu qemu-aarch64-static qemu-user-static

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go test -c -o "$work/offheap.test" .
[ $# -gt 0 ] || set -- -test.short -test.timeout=10m
start=$SECONDS
status=0
# qemu-user answers MADV_COLLAPSE with success and does nothing, and loses
# track of the range mremap moves from: the tests of those two skip.
OFFHEAP_QEMU_USER=1 qemu-aarch64-static "$work/offheap.test" "$@" || status=$?
echo "qemu-user: linux/arm64 tests exited $status after $((SECONDS - start)) s"
exit "$status"
