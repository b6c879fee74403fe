#!/bin/sh
# Install the Debian packages tessel needs, if any are missing.
# Uses sudo when not run as root. Prints what it installs; silent when
# everything is already there. CUDA is optional and never installed here.
set -eu

PACKAGES="build-essential cmake pkg-config libyaml-dev libopenblas-dev libopenmpi-dev openmpi-bin libcjson-dev libpcre2-dev libutf8proc-dev zlib1g-dev gnuplot-nox"

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: not a Debian system; make sure these (or your distribution's equivalents) are installed:" >&2
  echo "  $PACKAGES" >&2
  exit 0
fi

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing missing Debian packages:$missing"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "install-deps: not root and no sudo; install these first:$missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
