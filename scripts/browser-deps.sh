#!/usr/bin/env bash
# Install Debian's chromium (the browser the UI tests drive through Playwright) when missing.
# Playwright's own browser download is not used: the tests launch this one by path.
# Uses sudo when not root.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
echo "installing Debian packages: chromium fonts-dejavu-core"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium fonts-dejavu-core
