# Sourced by the set-up scripts: apt_install LABEL PACKAGE... installs Debian packages as root, or
# through sudo. Returns non-zero (after saying why on stderr) when neither is there or apt fails;
# each caller decides whether that stops it.
apt_install() {
  local label=$1
  shift
  echo "$label: installing Debian packages: $*"
  local sudo_cmd=()
  if [[ $(id -u) != 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "$label: need root (or sudo) to run: apt-get install $*" >&2
      return 1
    fi
    sudo_cmd=(sudo)
  fi
  "${sudo_cmd[@]}" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
