#!/usr/bin/env bash
# Installs Debian's chromium for the releases page's browser tests
# (app/webui, driven with chromedp). Idempotent: exits at once when it is
# there. Without root it says how to install it; the browser tests then skip
# locally (under CI=true they fail, so CI must have it).
set -euo pipefail

if command -v chromium >/dev/null; then
  echo "chromium: $(command -v chromium) is there"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "chromium: not installed; the browser tests will skip. Install it with: sudo apt-get install -y chromium" >&2
  exit 0
fi
echo "chromium: installing Debian's chromium..." >&2
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
echo "chromium: $(command -v chromium) installed"
