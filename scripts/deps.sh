#!/usr/bin/env bash
# Installs the Debian packages sbx builds and tests with, when any is missing.
# As root it runs apt-get itself; otherwise it prints the exact command and fails.
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev libevent-dev libyajl-dev
      libsqlite3-dev libseccomp-dev libcriterion-dev bubblewrap passt nodejs npm curl
      python3 hyperfine iproute2 procps)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# node and npm may come from elsewhere than these packages; accept working binaries
if command -v node >/dev/null && command -v npm >/dev/null; then
  tmp=()
  for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || tmp+=("$p"); done
  missing=("${tmp[@]}")
fi

# pasta opens /dev/net/tun as the jail's unprivileged uid. Debian's udev rule makes it
# 0666; a machine without udev (a container) may have made it 0600, and then every
# sandbox with ports or network: true is refused (GET /caps says why). Give it the
# distribution's mode, as root only, and only when it is the tun device.
tun_fix() {
  [ "$(id -u)" -eq 0 ] && [ -c /dev/net/tun ] || return 0
  [ "$(stat -c %a /dev/net/tun)" = 666 ] && return 0
  echo "sbx: /dev/net/tun is mode $(stat -c %a /dev/net/tun); setting the distribution default 0666 for pasta" >&2
  chmod 0666 /dev/net/tun
}

# supervisorctl's own code is the reference sbxctl status is compared with, byte for byte
# (tests/integration/test_apps.c): Debian's supervisor package, unpacked, never installed
# (installing it would start a supervisord). Without it that comparison prints SKIP.
supervisor_ref() {
  local dest=/var/cache/sbx-test/supervisor tmp
  [ "$(id -u)" -eq 0 ] || return 0
  [ -f $dest/usr/lib/python3/dist-packages/supervisor/supervisorctl.py ] && return 0
  tmp=$(mktemp -d)
  if ( cd "$tmp" && { apt-get download supervisor >/dev/null 2>&1 ||
         { apt-get update -qq && apt-get download supervisor >/dev/null 2>&1; }; } ) ; then
    mkdir -p $dest && dpkg-deb -x "$tmp"/supervisor_*.deb $dest
  else
    echo "sbx: could not fetch Debian's supervisor package: sbxctl status is not compared with it" >&2
  fi
  rm -rf "$tmp"
}

if [ ${#missing[@]} -eq 0 ]; then tun_fix; supervisor_ref; exit 0; fi

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "sbx: missing packages: ${missing[*]}" >&2
  echo "sbx: run as root:  apt-get update && $cmd" >&2
  exit 1
fi
echo "sbx: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
tun_fix
supervisor_ref
