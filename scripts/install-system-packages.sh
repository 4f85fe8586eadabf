#!/bin/sh
# Installs the Debian packages dbperf needs, only those missing. Idempotent; needs root (or sudo) to install.
set -eu
PACKAGES="libsqlite3-0 gcc libc6-dev make python3-venv valgrind binutils libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0
postgresql mariadb-server mariadb-plugin-rocksdb sysbench dpkg-dev debian-archive-keyring zlib1g-dev xz-utils
chromium"  # chromium: the HTML report's browser tests (Playwright drives it; no browser download)
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# The lab starts its own servers on private ports: keep the packages' services from starting at install.
policy_added=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    policy_added=1
fi
# Others may be installing at the same time: wait for the dpkg lock rather than fail.
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends $missing
if [ -n "$policy_added" ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi
