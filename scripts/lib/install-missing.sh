# install_missing PACKAGE...: apt-get installs the Debian packages given (already filtered to the
# missing ones by the caller), retrying after `apt-get update` when the index is stale.
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
install_missing() {
  [ $# -gt 0 ] || return 0
  echo "installing: $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y "$@" || { $SUDO apt-get update && $SUDO apt-get install -y "$@"; }
}
