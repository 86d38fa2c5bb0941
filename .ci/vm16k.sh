#!/usr/bin/env bash
# Runs the root, page heap and cache packages' tests on a real Linux
# kernel with 16 KiB pages: Debian's arm64-16k kernel booted under
# qemu-system-aarch64 (TCG, -cpu max), with an initramfs holding static
# linux/arm64 test binaries and .ci/vminit as init. The arguments given go
# to each test binary (-test.short -test.timeout=13m when none) by way of
# the kernel command line. Exits with the first failing binary's status,
# and fails when the machine ends without reporting one or without 16 KiB
# pages.
#
# Installs qemu-system-arm from the release's backports when no
# qemu-system-aarch64 of version 10 or later is there. The kernel, the newest
# that the linux-image-arm64-16k package of backports names, is kept in
# /var/cache/offheap-ci (root) or ~/.cache/offheap-ci; remove the cached
# one to take a newer.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/debian.sh

need_qemu qemu-system-aarch64 qemu-system-arm
command -v cpio >/dev/null || install_debs cpio

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "$(id -u)" = 0 ]; then cache=/var/cache/offheap-ci; else cache=${XDG_CACHE_HOME:-$HOME/.cache}/offheap-ci; fi
mkdir -p "$cache"
# $cache/arm64-16k-kernel names the kernel in use; vmlinuz-NAME and
# config-NAME beside it are its image and build configuration.
kernel=$(cat "$cache/arm64-16k-kernel" 2>/dev/null || true)
if [ -z "$kernel" ] || [ ! -f "$cache/vmlinuz-$kernel" ] || [ ! -f "$cache/config-$kernel" ]; then
	apt_ready
	pkg=$(apt-cache depends -t "$backports" linux-image-arm64-16k:arm64 |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-.*-arm64-16k(:arm64)?$/ { sub(/:arm64$/, "", $2); print $2; exit }') || true
	[ -n "$pkg" ] || fail "apt has no linux-image-arm64-16k:arm64 (from $backports) naming a kernel package"
	kernel=${pkg#linux-image-}
	echo "downloading $pkg:arm64"
	dl=$work/download
	mkdir "$dl"
	(cd "$dl" && apt-get download -qq -o APT::Sandbox::User=root "$pkg:arm64") || fail "apt-get download $pkg:arm64 failed"
	deb=("$dl"/*.deb)
	dpkg-deb --fsys-tarfile "${deb[0]}" | tar -x -C "$dl" "./boot/vmlinuz-$kernel" "./boot/config-$kernel" ||
		fail "$pkg has no boot/vmlinuz-$kernel or boot/config-$kernel"
	mv "$dl/boot/vmlinuz-$kernel" "$dl/boot/config-$kernel" "$cache/"
	echo "$kernel" >"$cache/arm64-16k-kernel"
fi
# The machine has no disk and no modules: all it needs is built in.
for opt in ARM64_16K_PAGES BLK_DEV_INITRD SERIAL_AMBA_PL011_CONSOLE PROC_FS SYSFS DEVTMPFS TMPFS; do
	grep -qx "CONFIG_$opt=y" "$cache/config-$kernel" || fail "kernel $kernel lacks CONFIG_$opt=y"
done

# The init is the script's own code: vet and staticcheck it here, as the
# ./... of the other steps skips .ci.
go vet ./.ci/vminit
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./.ci/vminit

mkdir "$work/root"
export CGO_ENABLED=0 GOOS=linux GOARCH=arm64
go build -o "$work/root/init" ./.ci/vminit
go test -c -o "$work/root/offheap.test" .
go test -c -o "$work/root/pageheap.test" ./internal/pageheap
go test -c -o "$work/root/cache.test" ./cache
unset CGO_ENABLED GOOS GOARCH
(cd "$work/root" && find . | cpio -o -H newc -R 0:0 --quiet) >"$work/initrd.cpio"

[ $# -gt 0 ] || set -- -test.short -test.timeout=13m
echo "booting $kernel: /offheap.test, /pageheap.test, /cache.test $*"
start=$SECONDS
# -test.timeout (13 minutes when no arguments are given; a test binary has
# none of its own) ends a hung test with its stacks before the VM's own
# limit, 15 minutes; panic=-1 and -no-reboot make a
# kernel panic end qemu at once.
set +e
timeout -k 10 15m qemu-system-aarch64 -M virt -cpu max -smp 2 -m 4G \
	-nodefaults -no-user-config -display none -serial stdio -no-reboot \
	-kernel "$cache/vmlinuz-$kernel" -initrd "$work/initrd.cpio" \
	-append "console=ttyAMA0 quiet panic=-1 -- $*" </dev/null | tee "$work/console.log"
qemu=${PIPESTATUS[0]}
set -e
took=$((SECONDS - start))
[ "$qemu" != 124 ] || fail "the VM ran past 15 minutes and was stopped"
tr -d '\r' <"$work/console.log" >"$work/console.txt"
page=$(sed -n 's/^offheap-vminit: page size \([0-9]*\)$/\1/p' "$work/console.txt")
status=$(sed -n 's/^offheap-vminit: exit status \([0-9]*\)$/\1/p' "$work/console.txt")
[ -n "$status" ] || fail "the VM ended after $took s without the tests' exit status (a kernel panic, a hang or no boot: see above)"
[ "$page" = 16384 ] || fail "the VM's page size is ${page:-unknown}, not 16384"
echo "vm16k: tests on $kernel (page size $page) exited $status; boot and tests took $took s"
exit "$status"
