# scripts/common.sh — paths and helpers shared by scripts/setup, scripts/test and
# scripts/run-examples (sourced, not run).
#
# Layout (all under build/, which git ignores):
#   build/release     the CMake release build of libuniflow and libuniflow_json
#   build/prefix      its installation: what users get, and what every test uses
#   build/installed   the C tests, CLI tests and C examples, built by CMake against
#                     build/prefix (UNIFLOW_USE_INSTALLED=ON), run with ctest
#   build/abi, build/consumer   work folders of Tests/abi and Tests/consumer

UNIFLOW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UNIFLOW_BUILD="$UNIFLOW_ROOT/build/release"
UNIFLOW_PREFIX="$UNIFLOW_ROOT/build/prefix"
UNIFLOW_INSTALLED="$UNIFLOW_ROOT/build/installed"
# The installed library, as Python and ctypes users load it.
UNIFLOW_LIB="$UNIFLOW_PREFIX/lib/libuniflow.so.0"

# The toolchain may be installed without being on PATH (/opt/swift is the usual
# place on this project's machines).
if ! command -v swift > /dev/null 2>&1; then
    for dir in /opt/swift/usr/bin /usr/share/swift/usr/bin "$HOME/.local/share/swiftly/bin"; do
        if [ -x "$dir/swift" ]; then PATH="$dir:$PATH"; break; fi
    done
fi
export PATH

# Messages: a prefix that stands out in long build logs.
say() { printf '==> %s\n' "$*"; }
warn() { printf '==> warning: %s\n' "$*" >&2; }
die() { printf '==> error: %s\n' "$*" >&2; exit 1; }

# Seconds since the script started, for the timings in the logs.
elapsed() { printf '%ds' "$SECONDS"; }

# --- shared by the reliability suites (Tests/stress, Tests/valgrind, Tests/sanitize, fuzz)

# The toolchain's folder: its clang is the only compiler that links the Swift
# sanitizer and libFuzzer runtimes (gcc leaves __asan_* undefined).
toolchain_bin() { dirname "$(readlink -f "$(command -v swift)")"; }

# env_int NAME DEFAULT MIN: prints the integer in $NAME (DEFAULT when unset or
# empty); a value that is not an integer >= MIN is an error (exit 2), never a
# silent default: a typo in a campaign's settings must not run the CI version.
env_int() {
    local name=$1 value=${!1:-$2} min=$3
    if [[ ! $value =~ ^[0-9]+$ ]] || (( 10#$value < min )); then
        printf '==> error: %s=%s: expected an integer >= %s\n' "$name" "$value" "$min" >&2
        exit 2
    fi
    printf '%d' "$((10#$value))"
}

# core_libdir: prints a folder holding libuniflow.so for the stress and valgrind
# runs. UNIFLOW_LIBDIR when set (scripts/test passes the installed build/prefix/lib,
# so these suites test what users get and share the one release build);
# otherwise SwiftPM's release build in .build-release, built here.
core_libdir() {
    if [[ -n ${UNIFLOW_LIBDIR:-} ]]; then
        [[ -e $UNIFLOW_LIBDIR/libuniflow.so ]] ||
            die "UNIFLOW_LIBDIR=$UNIFLOW_LIBDIR has no libuniflow.so"
        printf '%s' "$UNIFLOW_LIBDIR"
        return
    fi
    say "building the core (swift build -c release --scratch-path .build-release)" >&2
    (cd "$UNIFLOW_ROOT" && swift build -c release --scratch-path .build-release >&2) ||
        die "swift build -c release failed"
    (cd "$UNIFLOW_ROOT" && swift build -c release --scratch-path .build-release --show-bin-path)
}
