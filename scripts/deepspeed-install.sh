#!/usr/bin/env bash
# Install DeepSpeed into the virtualenv of the python given as $1, from a wheel built once per
# machine and kept in $RECURSOR_WHEEL_CACHE (default ~/.cache/recursor/wheels).
#
# DeepSpeed builds from source, against the torch already installed (no build isolation). Where
# that torch has no CUDA, the wheel compiles in DeepSpeed's CPU shared-memory op
# (`deepspeed_shm_comm`), which every DeepSpeed job otherwise JIT-compiles at its start (about
# a minute of both cores) into a torch-extensions cache that a checkout at another path cannot
# reuse: its build commands name the virtualenv. With CUDA, no op is compiled at install (they
# build on first use, as DeepSpeed documents). The cached wheel is keyed by the DeepSpeed,
# Python and torch versions and the ops built in, so a new checkout installs it in seconds.
set -euo pipefail
PY="$1"
version="${DEEPSPEED_VERSION:-0.19.8}"
cuda=$("$PY" -c 'import torch; print("cuda" if torch.version.cuda else "cpu")')
torch_version=$("$PY" -c 'import torch; print(torch.__version__)')
python_tag=$("$PY" -c 'import sys; print(f"py{sys.version_info[0]}{sys.version_info[1]}")')
ops=(DS_BUILD_OPS=0)
[ "$cuda" = cpu ] && ops+=(DS_BUILD_SHM_COMM=1)
cache_root="${RECURSOR_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/recursor/wheels}"
key="deepspeed-$version-$python_tag-torch$torch_version-$(IFS=-; echo "${ops[*]}" | tr -c 'A-Za-z0-9.=\n-' _)"
cache="$cache_root/$key"
wheel=$(ls "$cache"/deepspeed-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  echo "building DeepSpeed $version for torch $torch_version ($cuda; ${ops[*]}) into $cache" \
       "(a few minutes, once per machine)" >&2
  mkdir -p "$cache_root"
  build=$(mktemp -d "$cache_root/.build-XXXXXX")
  trap 'rm -rf "$build"' EXIT
  env "${ops[@]}" "$PY" -m pip wheel --quiet --no-cache-dir --no-deps --no-build-isolation \
      "deepspeed==$version" -w "$build" >&2
  # a complete wheel or none: another checkout building at once keeps whichever lands first
  mkdir -p "$cache"
  for built in "$build"/deepspeed-*.whl; do
    mv -n "$built" "$cache/" || true
  done
  wheel=$(ls "$cache"/deepspeed-*.whl | head -n 1)
fi
if "$PY" -m pip show --quiet deepspeed >/dev/null 2>&1; then
  # over an earlier DeepSpeed (of the same version pip would keep it, built without the op)
  "$PY" -m pip install --quiet --force-reinstall --no-deps "$wheel"
fi
"$PY" -m pip install --quiet "$wheel"  # its dependencies
