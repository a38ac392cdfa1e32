#!/usr/bin/env bash
# The test command: installs what the tests need when it is missing, then
# runs the whole suite with the OpenCL backend (its kernels on PoCL). The
# README gives it, .ci/run calls it, and a developer runs the same thing:
#
#   scripts/test.sh                      # go test -tags opencl -timeout 30m ./...
#   scripts/test.sh -run Mixed ./cmd/hub # arguments go to go test
#   scripts/test.sh --deps-only          # install (or print) what is missing, run nothing
#
# What it installs (Debian package: why):
#   gcc, libc6-dev       cgo, which the OpenCL binding (github.com/jgillich/go-opencl)
#                        and the race detector need
#   ocl-icd-opencl-dev,  the OpenCL loader, headers and pkg-config, which the binding
#   opencl-headers,      compiles against (-tags opencl)
#   pkg-config
#   pocl-opencl-icd      an OpenCL device on the CPU, so that every kernel test runs
#   iproute2             ip, for the two-device mDNS test's veth pair
#                        (cmd/hub TestWorkerFindsHubOnAnotherDevice)
#   qemu-user            qemu-aarch64 and qemu-arm, for the mixed-architecture
#                        session (cmd/hub TestMixedArchitectureSession) and .ci/run's
#                        ARM test runs
#   chromium             the browser tests of the dashboard and the simulator's report
#   ca-certificates      go's module downloads over HTTPS (a bare container has none)
#
# As root on Debian (or Ubuntu) it installs what is missing with apt-get,
# without a prompt. Anywhere else (not root, or no apt-get) it installs
# nothing: it prints the command that would (apt-get, or dnf on Fedora), then
# runs what it can. Without the OpenCL build packages or a C compiler the
# suite runs without -tags opencl (the pure-Go backend only); a test that
# needs ip, qemu or chromium skips, naming the package. It ends by listing
# what was not covered; its exit status is the tests'. The PyTorch
# walkthrough test (cmd/hub TestFinetuneWalkthrough) needs python3 with torch,
# torchvision and onnx, which this script does not install (over a
# gigabyte); without them it skips, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

say() { echo "test.sh: $*"; }

if ! command -v go >/dev/null; then
	say "no go command: install Go 1.26 (https://go.dev/dl/) into /usr/local/go or onto PATH" >&2
	exit 2
fi

# Each need: Debian package, Fedora package, and a check that holds when
# what the package provides is there (used where dpkg cannot say).
needs=(
	"gcc|gcc|command -v cc || command -v gcc"
	"libc6-dev|glibc-devel|test -e /usr/include/stdio.h"
	"ocl-icd-opencl-dev|ocl-icd-devel|pkg-config --exists OpenCL"
	"opencl-headers|opencl-headers|test -e /usr/include/CL/cl.h"
	"pkg-config|pkgconf-pkg-config|command -v pkg-config"
	"pocl-opencl-icd|pocl|ls /etc/OpenCL/vendors/*.icd"
	"iproute2|iproute|command -v ip"
	"qemu-user|qemu-user|command -v qemu-aarch64 && command -v qemu-arm"
	"chromium|chromium|command -v chromium || command -v chromium-browser"
	"ca-certificates|ca-certificates|test -s /etc/ssl/certs/ca-certificates.crt"
)

present() { # debian-package check
	if command -v dpkg-query >/dev/null; then
		dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" && return 0
	fi
	bash -c "$2" >/dev/null 2>&1
}

missing_deb=() missing_rpm=()
for n in "${needs[@]}"; do
	IFS='|' read -r deb rpm check <<<"$n"
	present "$deb" "$check" || { missing_deb+=("$deb"); missing_rpm+=("$rpm"); }
done

if [ ${#missing_deb[@]} -gt 0 ]; then
	say "missing: ${missing_deb[*]} (see this script's header for what each is for)"
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		say "installing them with apt-get (root on a Debian system)"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq "${missing_deb[@]}" >/dev/null
		missing_deb=() missing_rpm=()
		for n in "${needs[@]}"; do
			IFS='|' read -r deb rpm check <<<"$n"
			present "$deb" "$check" || { missing_deb+=("$deb"); missing_rpm+=("$rpm"); }
		done
		if [ ${#missing_deb[@]} -gt 0 ]; then
			say "apt-get installed them but still missing: ${missing_deb[*]}" >&2
			exit 2
		fi
	else
		why="not root"
		[ "$(id -u)" = 0 ] && why="no apt-get"
		say "not installing ($why); to install them, run:"
		if command -v apt-get >/dev/null; then
			echo "    sudo apt-get install -y ${missing_deb[*]}"
		elif command -v dnf >/dev/null; then
			echo "    sudo dnf install -y ${missing_rpm[*]}"
		else
			echo "    Debian: apt-get install -y ${missing_deb[*]}"
			echo "    Fedora: dnf install -y ${missing_rpm[*]}"
		fi
		[ "${1:-}" = --deps-only ] || say "running what can run without them"
	fi
fi

if [ "${1:-}" = --deps-only ]; then
	# .ci/run: everything must be there before it vets and builds with the tag.
	[ ${#missing_deb[@]} -eq 0 ] || exit 2
	exit 0
fi

has() { [[ " ${missing_deb[*]} " != *" $1 "* ]]; }
tags=(-tags opencl)
uncovered=()
if ! has gcc || ! has libc6-dev || ! has ocl-icd-opencl-dev || ! has opencl-headers || ! has pkg-config; then
	tags=()
	uncovered+=("the OpenCL backend (built without -tags opencl: no C compiler or no OpenCL headers, loader or pkg-config)")
elif ! has pocl-opencl-icd; then
	uncovered+=("the OpenCL kernel tests, unless another OpenCL device is installed (they skip with \"no OpenCL device\")")
fi
has iproute2 || uncovered+=("the two-device mDNS test (no ip: iproute2)")
has qemu-user || uncovered+=("the mixed-architecture session (no qemu-user)")
has chromium || uncovered+=("the browser tests (no chromium)")
[ "$(id -u)" = 0 ] || uncovered+=("the network-namespace tests (they need root)")

[ $# -gt 0 ] || set -- ./...
# go test stops a package after 10 minutes; cmd/hub's process tests take
# longer than that on a busy 2-core machine. A -timeout given wins.
timeout=(-timeout 30m)
for a in "$@"; do
	case $a in -timeout | -timeout=* | -test.timeout | -test.timeout=*) timeout=() ;; esac
done
go version
say "go test ${tags[*]:+${tags[*]} }${timeout[*]:+${timeout[*]} }$*"
status=0
go test "${tags[@]}" "${timeout[@]}" "$@" || status=$?
if [ ${#uncovered[@]} -gt 0 ]; then
	say "NOT covered by this run:"
	printf '    %s\n' "${uncovered[@]}"
fi
exit $status
