#!/bin/sh
# tools/wine-run.sh PROGRAM [ARGS...]: runs a Windows program under Wine
# for ctest (the windows preset's CMAKE_CROSSCOMPILING_EMULATOR, and
# tests/consumer/win.sh). Environment: WINEPREFIX (ctest sets the build
# tree's own).
#
# Why not plain wine: the first Wine program of a server's life starts
# Wine's system processes (services.exe, winedevice.exe, plugplay.exe,
# ...), which inherit that program's stdout and stderr and live as long as
# the server does. Under ctest those are the test's output pipes, and ctest
# waits for them to close; with two tests at a time the server never goes
# idle, so the first test "timed out" long after it had printed all its
# results (sync_threads, 300 s, in a loaded run). So: the server is
# started here, persistent for a minute after its last program, and the
# system processes, when this prefix has none, from a program whose output
# goes nowhere; under a lock (ctest starts two tests at once).
set -eu
# wine64 itself: Debian's wine script says "wine32 is missing" on every run.
if command -v wine64 >/dev/null 2>&1; then
    wine=$(command -v wine64)
elif [ -x /usr/lib/wine/wine64 ]; then
    wine=/usr/lib/wine/wine64
else
    wine=$(command -v wine)
fi
server=$(command -v wineserver || echo /usr/lib/wine/wineserver64)
export WINEPREFIX="${WINEPREFIX:-$HOME/.wine}"
mkdir -p "$WINEPREFIX"
known=$WINEPREFIX/.weft-wine-services   # the pid of its services.exe, once seen

is_services() {   # is_services PID
    case $({ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null) in
    *'system32\services.exe'*) return 0 ;;
    esac
    return 1
}

# Whether Wine's services.exe runs for this prefix: the one seen last
# time, or one whose environment names the prefix (then remembered).
# /proc, not pgrep: procps is not on every fresh machine.
has_services() {
    p=$(cat "$known" 2>/dev/null || true)
    if [ -n "$p" ] && is_services "$p"; then
        return 0
    fi
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        if is_services "$p" &&
            { tr '\0' '\n' <"$d/environ"; } 2>/dev/null | grep -qxF "WINEPREFIX=$WINEPREFIX"; then
            echo "$p" >"$known"
            return 0
        fi
    done
    return 1
}

(
    flock 9
    if ! has_services; then
        # fd 9 closed for both: what they start would hold the lock.
        "$server" -p60 </dev/null >/dev/null 2>&1 9>&- || true   # 0: started; 2: one runs already
        "$wine" cmd /c exit </dev/null >/dev/null 2>&1 9>&- || true
        has_services || true   # remember its pid
    fi
) 9>"$WINEPREFIX/.weft-wine-run.lock"
exec "$wine" "$@"
