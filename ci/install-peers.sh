#!/usr/bin/env bash
# Installs the peer loaders sluice compares itself with (docs/peers.md), one
# framework at a time: `ci/install-peers.sh FRAMEWORK...` installs only
# those, `--list` shows each with its download size and what it needs,
# `all` installs every one (over an hour and several GB). Each install says
# how long it took. Debian packages go into the system's Python
# (/usr/bin/python3, which runs peer:numpy and, without .venv-torch,
# peer:torch unless SLUICE_PYTHON / SLUICE_TORCH_PYTHON say otherwise), only
# those missing, so a second run needs no network; PyPI packages, every one
# pinned, into a virtual environment per framework under the repository
# (git-ignored).
#
# The apt steps need root (or sudo); SKIP_APT=1 skips them (the packages
# are there already). Where each venv goes: VENV (.venv-peers: grain, tfdata,
# jax), DATARAX_VENV, STREAMING_VENV, HF_VENV, WDS_VENV, TORCH_VENV
# (.venv-torch: torch2, litdata, energon), DALI_VENV, FFCV_VENV; then point
# sluice at it with the SLUICE_*_PYTHON variable docs/peers.md names.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

# name|download (measured December 2026)|what it needs|peers it runs
frameworks=(
  "numpy|5 MB|Debian's python3-numpy (1.24) in the system's Python|peer:numpy, peer:numpy-idiomatic"
  "torch|146 MB with numpy (168 Debian packages, 633 MB installed)|Debian's python3-torch 1.13.1, CPU only, and python3-numpy in the system's Python|peer:torch, peer:torch-idiomatic, peer:torch-idiomatic-w2"
  "torch2|3.0 GB (torch 2.15.0's wheel 539 MB and NVIDIA's CUDA wheels it requires on Linux: PyPI has no CPU-only torch 2 for x86-64 Linux)|PyPI, ci/peers-torch.txt, in .venv-torch (used before the system's torch when present)|peer:torch* on PyTorch 2, peer:litdata, peer:energon"
  "litdata|as torch2|the same as torch2|peer:litdata"
  "energon|as torch2|the same as torch2|peer:energon"
  "grain|23 MB (13 wheels)|PyPI grain 0.2.18, numpy 2.4.6, in .venv-peers|peer:grain, peer:grain-idiomatic, peer:grain-idiomatic-t2"
  "tfdata|335 MB (33 wheels)|PyPI tensorflow-cpu 2.21.0, numpy 2.4.6, in .venv-peers|peer:tfdata, peer:tfdata-idiomatic"
  "jax|142 MB (7 wheels)|PyPI jax[cpu] 0.10.2, numpy 2.4.6, in .venv-peers|peer:jax, peer:jax-idiomatic"
  "datarax|923 MB (81 wheels)|PyPI, ci/peers-datarax.txt (its own jax, grain and tensorflow), in .venv-datarax|peer:datarax, peer:datarax-scan"
  "streaming|35 MB (19 wheels) plus Debian's torch|PyPI, ci/peers-streaming.txt (--no-deps) in .venv-streaming over Debian's torch, torchvision and xxhash|peer:mosaicml-streaming"
  "hf-datasets|93 MB (24 wheels)|PyPI, ci/peers-hf-datasets.txt, in .venv-hf|peer:hf-datasets"
  "webdataset|18 MB (5 wheels)|PyPI, ci/peers-webdataset.txt, in .venv-wds|peer:webdataset"
  "spdl|31 MB (5 wheels)|PyPI, ci/peers-spdl.txt, in .venv-spdl|peer:spdl"
  "ray|168 MB (25 wheels)|PyPI, ci/peers-ray.txt, in .venv-ray|peer:ray-data"
  "deeplake|75 MB (9 wheels)|PyPI, ci/peers-deeplake.txt, in .venv-deeplake|peer:deeplake"
  "dali|about 424 MB (its wheel; not remeasured)|PyPI, ci/peers-dali.txt (nvidia-dali-cuda120, which runs its CPU operators without a GPU), in .venv-dali|peer:dali"
  "ffcv|over 3.0 GB (PyTorch 2's wheels; ffcv itself builds from source)|PyPI, ci/peers-ffcv.txt (on PyTorch 2), in .venv-ffcv; Debian's libopencv-dev, libturbojpeg0-dev and pkg-config, which its C extension builds against|peer:ffcv"
)

usage() {
  cat <<EOF
usage: ci/install-peers.sh FRAMEWORK...    install only these frameworks' peers
       ci/install-peers.sh all             every framework (over an hour, several GB)
       ci/install-peers.sh --list          each framework, its download and what it needs
       ci/install-peers.sh --help

frameworks: $(for f in "${frameworks[@]}"; do printf '%s ' "${f%%|*}"; done)

The README's main job (ci/bench.sh) installs numpy and torch (Debian's CPU-only
PyTorch 1.13); ci/test.sh installs numpy. docs/peers.md says which Python runs
each peer.
EOF
}

list() {
  printf '%-12s %-s\n' framework "download; what it needs; peers"
  for f in "${frameworks[@]}"; do
    IFS='|' read -r name size needs peers <<<"$f"
    printf '%-12s %s\n%-12s   needs: %s\n%-12s   runs: %s\n' "$name" "$size" "" "$needs" "" "$peers"
  done
}

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
apt_updated=0

# Installs the Debian packages among $@ that are missing.
apt_install() {
  [ "${SKIP_APT:-0}" = 1 ] && return 0
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  installed=1
  echo "install-peers: apt-get install ${missing[*]}" >&2
  if [ "$apt_updated" = 0 ]; then
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# venv DIR [--system-site-packages]: makes DIR with the system's Python 3.
venv() {
  apt_install python3 python3-venv
  [ -x "$1/bin/python" ] || /usr/bin/python3 -m venv "${@:2}" "$1"
}

pip_install() {
  local dir=$1
  shift
  installed=1
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

# show PYTHON LABEL MODULE...: prints each distribution's version.
show() {
  local python=$1 label=$2
  shift 2
  "$python" -c '
import sys
from importlib.metadata import version
print(sys.argv[1] + ":", ", ".join(n + " " + version(n) for n in sys.argv[2:]))
' "$label" "$@"
}

peers_venv=${VENV:-$here/.venv-peers}
torch_venv=${TORCH_VENV:-$here/.venv-torch}

install_one() {
  case $1 in
    numpy)
      apt_install python3 python3-numpy
      /usr/bin/python3 -c 'import numpy; print("system python: numpy", numpy.__version__)' ;;
    torch)
      apt_install python3 python3-numpy python3-torch
      # The package's version, not an import: importing torch takes seconds
      # (a minute on a loaded machine) before every main job.
      echo "system python: torch $(dpkg-query -W -f='${Version}' python3-torch 2>/dev/null || echo '(not from Debian)') (CPU only)" ;;
    torch2 | litdata | energon)
      venv "$torch_venv"
      pip_install "$torch_venv" -r "$here/ci/peers-torch.txt"
      show "$torch_venv/bin/python" .venv-torch torch litdata megatron-energon ;;
    grain)
      venv "$peers_venv"
      pip_install "$peers_venv" grain==0.2.18 numpy==2.4.6 xxhash==3.5.0
      show "$peers_venv/bin/python" .venv-peers grain numpy ;;
    tfdata)
      venv "$peers_venv"
      pip_install "$peers_venv" tensorflow-cpu==2.21.0 numpy==2.4.6 xxhash==3.5.0
      show "$peers_venv/bin/python" .venv-peers tensorflow-cpu numpy ;;
    jax)
      venv "$peers_venv"
      pip_install "$peers_venv" 'jax[cpu]==0.10.2' jaxlib==0.10.2 numpy==2.4.6 xxhash==3.5.0
      show "$peers_venv/bin/python" .venv-peers jax numpy ;;
    datarax)
      local d=${DATARAX_VENV:-$here/.venv-datarax}
      venv "$d"
      pip_install "$d" -r "$here/ci/peers-datarax.txt"
      show "$d/bin/python" .venv-datarax datarax jax flax grain numpy ;;
    streaming)
      # Streaming imports torch and torchvision, from Debian (CPU only):
      # resolving its requirements on PyPI would bring PyPI's torch and its
      # CUDA libraries, so its pins install with --no-deps over the
      # system's packages.
      apt_install python3-numpy python3-xxhash python3-torch python3-torchvision
      local d=${STREAMING_VENV:-$here/.venv-streaming}
      venv "$d" --system-site-packages
      pip_install "$d" --no-deps -r "$here/ci/peers-streaming.txt"
      show "$d/bin/python" .venv-streaming mosaicml-streaming torch torchvision ;;
    hf-datasets | webdataset | spdl | ray | deeplake | dali)
      local req=$1 dist=$1 dir
      case $1 in
        hf-datasets) dir=${HF_VENV:-$here/.venv-hf} dist=datasets ;;
        webdataset) dir=${WDS_VENV:-$here/.venv-wds} ;;
        dali) dir=${DALI_VENV:-$here/.venv-dali} dist=nvidia-dali-cuda120 ;;
        *) dir=$here/.venv-$1 ;;
      esac
      venv "$dir"
      pip_install "$dir" -r "$here/ci/peers-$req.txt"
      show "$dir/bin/python" "$(basename "$dir")" "$dist" ;;
    ffcv)
      apt_install libopencv-dev libturbojpeg0-dev pkg-config
      local d=${FFCV_VENV:-$here/.venv-ffcv}
      venv "$d"
      pip_install "$d" -r "$here/ci/peers-ffcv.txt"
      show "$d/bin/python" .venv-ffcv ffcv torch ;;
  esac
}

if [ $# -eq 0 ]; then
  usage >&2
  exit 2
fi
wanted=()
for arg in "$@"; do
  case $arg in
    -h | --help) usage; exit 0 ;;
    --list) list; exit 0 ;;
    all) for f in "${frameworks[@]}"; do wanted+=("${f%%|*}"); done ;;
    *)
      known=0
      for f in "${frameworks[@]}"; do [ "${f%%|*}" = "$arg" ] && known=1; done
      if [ "$known" = 0 ]; then
        echo "ci/install-peers.sh: unknown framework '$arg' (ci/install-peers.sh --list shows them)" >&2
        exit 2
      fi
      wanted+=("$arg") ;;
  esac
done

done_list=" "
for name in "${wanted[@]}"; do
  # litdata and energon are torch2's venv: install it once.
  key=$name
  case $name in litdata | energon) key=torch2 ;; esac
  case $done_list in *" $key "*) continue ;; esac
  done_list="$done_list$key "
  start=$SECONDS
  installed=0
  install_one "$key"
  if [ "$installed" = 1 ]; then
    echo "install-peers: $key installed in $((SECONDS - start)) s"
  else
    echo "install-peers: $key was installed already (checked in $((SECONDS - start)) s)"
  fi
done
