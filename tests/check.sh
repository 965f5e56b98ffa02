# Sourced by tests/run.sh and scripts/windows.sh: `check NAME CMD...` runs CMD and counts
# it in $passed or $failed, printing "== NAME", then "ok: NAME" or "FAILED: NAME"
# (NAME prefixed with $CHECK_PREFIX). The scripts end with "$passed passed, $failed failed".
passed=0
failed=0
check() {
    local name="${CHECK_PREFIX:-}$1"
    shift
    echo "== $name"
    if "$@"; then
        passed=$((passed + 1))
        echo "ok: $name"
    else
        failed=$((failed + 1))
        echo "FAILED: $name"
    fi
}
