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
