# shellcheck shell=bash disable=SC2016 # $(...) in apt's --format is apt's
# Sourced by the CI scripts that need Debian packages a fresh machine lacks
# (qemu for arm64, the arm64 kernel with 16 KiB pages). What is installed
# stays installed, so a machine that keeps its state pays for the
# installation once. The packages come from the release's backports:
# bookworm's qemu 7.2 runs out of memory on the heaps' 64 GiB reservations.

# codename is the Debian release's, backports the suite installs come from.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
backports=$codename-backports

# fail prints its arguments on stderr and ends the script.
fail() { echo "$(basename "$0"): $*" >&2; exit 1; }

# qemu_major prints the major version of the qemu program $1, 0 without it.
qemu_major() {
	command -v "$1" >/dev/null || { echo 0; return; }
	local v
	v=$("$1" --version | sed -n '1s/^.* version \([0-9]*\)\..*$/\1/p')
	echo "${v:-0}"
}

apt_updated=
# apt_ready makes apt see the backports suite and arm64 packages, and reads
# the package lists once per script.
apt_ready() {
	[ -n "$apt_updated" ] && return
	[ "$(id -u)" = 0 ] || fail "not root: cannot install the Debian packages it needs"
	[ -n "$codename" ] || fail "not a Debian release with a codename (/etc/os-release)"
	if ! apt-get indextargets --no-release-info --format '$(RELEASE)' | grep -qx "$backports"; then
		local uri
		uri=$(apt-get indextargets --no-release-info --format '$(RELEASE) $(REPO_URI)' | awk -v r="$codename" '$1 == r { print $2; exit }')
		[ -n "$uri" ] || fail "apt has no source for $codename to take $backports from"
		echo "adding $backports ($uri) to apt's sources"
		printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			"$uri" "$backports" >/etc/apt/sources.list.d/offheap-ci-backports.sources
	fi
	dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
	apt-get update -qq || fail "apt-get update failed"
	apt_updated=1
}

# install_debs installs the packages named from backports (or the release
# itself for those backports lacks).
install_debs() {
	apt_ready
	echo "installing $* from $backports"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t "$backports" "$@" >/dev/null ||
		fail "apt-get install $* failed"
}

# need_qemu installs package $2 unless qemu program $1 of version 10 or
# later is there, and fails if it still is not.
need_qemu() {
	[ "$(qemu_major "$1")" -ge 10 ] && return
	install_debs "$2"
	[ "$(qemu_major "$1")" -ge 10 ] || fail "$2 from $backports gave no $1 of version 10 or later"
}
