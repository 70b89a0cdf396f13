#!/usr/bin/env bash
# Makes sure Debian's chromium (the headless browser the dashboard test
# drives) is installed, installing it through apt when it is missing (a
# fresh CI machine), without recommended packages. Prints its path.
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1; then
  echo "installing the chromium package" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt_install() {
    apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 chromium >&2
  }
  # The package lists may be fresh already (scripts/pgserver.sh updates
  # them when it installs the server): update only when that fails.
  if ! apt_install 2>/dev/null; then
    apt-get update -qq -o DPkg::Lock::Timeout=300 >&2
    apt_install
  fi
fi
command -v chromium
