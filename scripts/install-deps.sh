#!/usr/bin/env bash
# Installs the system packages Sandbar needs to build, run and test, when
# they are missing. Debian/Ubuntu only; on macOS nothing is needed beyond Go
# and the Xcode command line tools. Fast when everything is present.
set -euo pipefail

case "$(uname -s)" in
Darwin)
	command -v go >/dev/null || { echo "Go is not installed: get it from the Go website or 'brew install go'" >&2; exit 1; }
	exit 0
	;;
Linux) ;;
*)
	echo "unsupported system $(uname -s): Sandbar runs on macOS and Linux" >&2
	exit 1
	;;
esac

# Hypervisor, Fyne's cgo build deps, the test harness (Xvfb, D-Bus, a real
# Secret Service daemon, xdotool to find windows, xdg-open as a desktop has
# it), git and e2fsprogs for checking built images, Chromium (headless) for
# the published ports' cookie test, git-lfs for the merge tests (a person's
# global `git lfs install` that a session's .lfsconfig must not steer),
# docker-registry (distribution) and apache2-utils (htpasswd) for the OCI
# image pulls' tests against a real registry on loopback, sqlite3 for the
# fault tests that damage a database row by hand; openssh-server, libvirt
# and qemu-utils for the remote hosts' tests, which run an sshd and a
# libvirtd in a network namespace as the host a session starts --on.
# Never dbus-x11: it makes every D-Bus client try to
# autolaunch a bus on the X display, which hangs headless tests.
packages=(
	qemu-system-x86 git git-lfs e2fsprogs ca-certificates
	gcc pkg-config libgl1-mesa-dev xorg-dev libxcursor-dev libxrandr-dev libxinerama-dev
	libxi-dev libxxf86vm-dev libwayland-dev libxkbcommon-dev
	xvfb xdotool gnome-keyring dbus libsecret-tools xdg-utils
	chromium
	docker-registry apache2-utils
	sqlite3
	openssh-server libvirt-daemon-system libvirt-clients qemu-utils
)

if ! command -v dpkg-query >/dev/null; then
	echo "this Linux has no dpkg: install the equivalents of: ${packages[*]}" >&2
	exit 1
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ $status == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	echo "==> system packages: all present"
	exit 0
fi

echo "==> installing system packages: ${missing[*]}"
sudo=""
if [[ $(id -u) != 0 ]]; then
	command -v sudo >/dev/null || { echo "not root and no sudo: install ${missing[*]} yourself" >&2; exit 1; }
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "==> system packages installed"
