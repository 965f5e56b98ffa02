# Sourced by tests/run.sh, scripts/windows.sh and scripts/bench-transport.sh, which each
# list the Debian packages whose tools they find missing:
#   apt_install_missing ${missing[@]+"${missing[@]}"}
# installs them (nothing when the list is empty), through sudo when not root.
apt_install_missing() {
    [ "$#" -gt 0 ] || return 0
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "== installing: $*"
    $sudo apt-get update
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}
