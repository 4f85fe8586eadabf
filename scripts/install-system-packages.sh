#!/bin/sh
# Installs the Debian packages dbperf needs, only those missing. Idempotent; needs root (or sudo) to install.
#   install-system-packages.sh demo   what `make demo` needs: the SQLite demo (compiler, valgrind for its simulated tier)
#   install-system-packages.sh        everything `make test` and `make lint` need: the demo's, plus the servers
#   install-system-packages.sh build  all of that, plus what servers built from source need (`make setup-builds`)
set -eu
# The demo builds SQLite from source (gcc, libc6-dev, make), runs in .venv (python3-venv) and counts every target
# under cachegrind (valgrind; binutils for the symbols); libsqlite3-0 is the system SQLite of examples/quick.toml.
DEMO_PACKAGES="libsqlite3-0 gcc libc6-dev make python3-venv valgrind binutils"
# The rest: allocators (allocator = ...), the servers and their tools (pgbench comes with postgresql), Debian's
# source packages of the servers (dpkg-dev, keyring, zlib, xz), and chromium for the HTML report's browser tests
# (Playwright drives it; no browser download); strace counts the clients' system calls (benchmarks/vs_*), whose
# floor client (benchmarks/vs_sysbench/floor_client.c) is compiled against libmariadb and libpq.
SERVER_PACKAGES="libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0
postgresql mariadb-server mariadb-plugin-rocksdb sysbench dpkg-dev debian-archive-keyring zlib1g-dev xz-utils
chromium strace libmariadb-dev libpq-dev"
# Servers built from source (buildlab/server_build.py's recipes name each tool's and header's package; the tests
# check that this list holds them): MariaDB's and MySQL's cmake builds and their system libraries, BOLT (bolt-16 and its
# instrumentation runtime), the compiler a target may name instead of the user's (compiler = "clang-16"), and ccache,
# the compiler launcher of every build in a kept build tree (buildlab/compiler_cache.py: without it a rebuild compiles
# again what only moved, and the build says so). PostgreSQL's build needs only what is above, and ccache.
BUILD_PACKAGES="cmake ninja-build bison g++ libssl-dev libpcre2-dev libfmt-dev libncurses-dev pkg-config
bolt-16 libbolt-16-dev clang-16 ccache libicu-dev libzstd-dev liblz4-dev libprotobuf-dev libprotoc-dev
protobuf-compiler"
missing_of() {
    out=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || out="$out $p"
    done
    echo "$out"
}
case "${1:-all}" in
    demo)
        # shellcheck disable=SC2086  # word splitting of the lists is meant
        [ -z "$(missing_of $SERVER_PACKAGES)" ] ||
            echo "make demo installs only what the SQLite demo needs; the servers (PostgreSQL, MariaDB, sysbench, pgbench), the allocators and chromium come with make test (or make setup)"
        # shellcheck disable=SC2086
        missing=$(missing_of $DEMO_PACKAGES) ;;
    all)
        # shellcheck disable=SC2086
        missing=$(missing_of $DEMO_PACKAGES $SERVER_PACKAGES) ;;
    build)
        # shellcheck disable=SC2086
        missing=$(missing_of $DEMO_PACKAGES $SERVER_PACKAGES $BUILD_PACKAGES) ;;
    *)
        echo "usage: $0 [demo|all|build]" >&2
        exit 2 ;;
esac
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
