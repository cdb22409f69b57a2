#!/usr/bin/env bash
# Make a Docker-API container engine answer at $DOCKER_HOST.
#
# When DOCKER_HOST is unset or names Recursor's own podman socket, install podman and runc
# (Debian packages) and start `podman system service` on that socket with the settings these
# machines need (runtime runc; low default ulimits, since crun and the defaults fail here).
# Any other DOCKER_HOST (a real Docker Engine, say) is only checked, never touched.
set -euo pipefail
RECURSOR_SOCKET="unix:///run/recursor-podman/podman.sock"
host="${DOCKER_HOST:-$RECURSOR_SOCKET}"
path="${host#unix://}"

answers() {  # does the engine at $path answer the Docker API ping?
  curl -sf --max-time 3 --unix-socket "$path" http://d/_ping >/dev/null 2>&1
}

if [ "$host" != "$RECURSOR_SOCKET" ]; then
  if [[ "$host" == unix://* ]] && ! answers; then
    echo "no container engine answers at DOCKER_HOST=$host" >&2
    exit 1
  fi
  exit 0
fi
answers && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
[ -x /usr/sbin/runc ] || command -v runc >/dev/null 2>&1 || need+=(runc)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

conf_dir=/etc/recursor
$sudo mkdir -p "$conf_dir" "$(dirname "$path")"
$sudo tee "$conf_dir/containers.conf" >/dev/null <<'CONF'
# Written by Recursor's scripts/container-engine.sh for its podman service.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1000:1000"]

[engine]
runtime = "runc"
CONF

echo "starting podman system service at $RECURSOR_SOCKET"
log=/var/tmp/recursor-podman.log
# conmon writes files (an "oom" marker, say) into its working directory, which it inherits
# from the service: give it one of its own, never the project checkout
workdir=/var/tmp/recursor-podman
$sudo mkdir -p "$workdir"
(cd "$workdir" && $sudo env CONTAINERS_CONF="$conf_dir/containers.conf" \
  setsid podman system service --time=0 "$RECURSOR_SOCKET" >"$log" 2>&1 < /dev/null &)
for _ in $(seq 1 100); do
  answers && exit 0
  sleep 0.1
done
echo "podman system service did not answer at $RECURSOR_SOCKET; its log ($log):" >&2
tail -20 "$log" >&2
exit 1
