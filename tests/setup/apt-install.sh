#!/usr/bin/env bash
# Install the Debian packages named in $APT_PACKAGES that are not installed yet.
# Idempotent and quiet when everything is present; `apt-get update` runs only when needed.
set -euo pipefail
missing=()
for pkg in $APT_PACKAGES; do
  dpkg-query -W -f '${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed || missing+=("$pkg")
done
((${#missing[@]})) || exit 0
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
