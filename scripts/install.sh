#!/usr/bin/env bash
# Install the project, editable, with the extras given as $2 (e.g. "dev,train,ray"), into the
# virtualenv of the python given as $1.
#
# With uv (installed into the virtualenv from the package index) when it can: it installs the
# ~150 packages from its cache in seconds where pip takes a minute and a half of CPU here. uv
# does not read pip's configuration, so the settings that choose what gets installed are
# passed on from `pip config list` (which shows pip.conf files and PIP_* variables alike):
# index-url, extra-index-url, find-links, constraint, and cert (as SSL_CERT_FILE); pip's rule
# of taking the best version across all indexes is kept (--index-strategy unsafe-best-match).
# Bytecode is not compiled at install: each module is compiled when first imported (the
# Makefile unsets PYTHONDONTWRITEBYTECODE for its commands). Where uv cannot be installed or
# fails, pip does the install, as before.
set -euo pipefail
PY="$1"
extras="$2"
target=".[$extras]"

uv_arguments() {
  local line key value item
  while IFS= read -r line; do
    key="${line%%=*}"
    value="${line#*=}"
    value="${value#\'}"
    value="${value%\'}"
    case "${key##*.}" in
      index-url) uv_args+=(--index-url "$value") ;;
      extra-index-url) for item in $value; do uv_args+=(--extra-index-url "$item"); done ;;
      find-links) for item in $value; do uv_args+=(--find-links "$item"); done ;;
      constraint) for item in $value; do uv_args+=(--constraint "$item"); done ;;
      cert) export SSL_CERT_FILE="$value" ;;
    esac
  done < <("$PY" -m pip config list 2>/dev/null)
}

uv_args=()
bin="$(dirname "$PY")"
if "$PY" -m pip install --quiet uv && [ -x "$bin/uv" ]; then
  uv_arguments
  if "$bin/uv" pip install --quiet --python "$PY" --index-strategy unsafe-best-match \
       "${uv_args[@]}" -e "$target"; then
    exit 0
  fi
  echo "uv could not install $target; installing it with pip" >&2
fi
"$PY" -m pip install --quiet -e "$target"
