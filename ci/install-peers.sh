#!/bin/sh
# Installs the peer loaders sluice compares itself with (docs/peers.md).
#
# 1. From Debian, into the system's Python (/usr/bin/python3, which runs
#    peer:numpy and peer:numpy-idiomatic unless SLUICE_PYTHON says
#    otherwise): numpy, and Debian's torch and torchvision, which MosaicML
#    Streaming's venv (4.) sees; and libopencv-dev, libturbojpeg0-dev and
#    pkg-config, which FFCV's C extension builds against (7.).
# 2. From PyPI, with pinned versions, into a virtual environment at
#    <repo>/.venv-peers (git-ignored), which runs peer:grain, peer:grain-t2,
#    peer:tfdata and peer:jax unless SLUICE_PEER_PYTHON names another Python:
#    grain, tensorflow-cpu, jax[cpu] and numpy.
# 3. From PyPI, every package pinned (ci/peers-datarax.txt), into a second
#    virtual environment at <repo>/.venv-datarax, which runs peer:datarax and
#    peer:datarax-scan unless SLUICE_DATARAX_PYTHON names another Python:
#    Datarax pins its own jax, grain and tensorflow (2.20, where the peers'
#    environment has 2.21), so it cannot share .venv-peers.
# 4. MosaicML Streaming, every package pinned (ci/peers-streaming.txt),
#    with --no-deps into <repo>/.venv-streaming, a venv that sees the
#    system's packages: Streaming imports torch and torchvision, which come
#    from Debian (CPU only; python3-torchvision is in the apt step). It runs
#    peer:mosaicml-streaming unless SLUICE_STREAMING_PYTHON names another
#    Python.
# 6. From PyPI, every package pinned, one virtual environment per framework
#    whose pins are its own: <repo>/.venv-spdl (ci/peers-spdl.txt, peer:spdl,
#    or SLUICE_SPDL_PYTHON) and <repo>/.venv-ray (ci/peers-ray.txt,
#    peer:ray-data, or SLUICE_RAY_PYTHON) and <repo>/.venv-deeplake
#    (ci/peers-deeplake.txt, peer:deeplake, or SLUICE_DEEPLAKE_PYTHON),
#    and <repo>/.venv-dali (ci/peers-dali.txt, peer:dali on DALI's CPU
#    backend, or SLUICE_DALI_PYTHON; DALI_VENV=<dir> puts it elsewhere):
#    NVIDIA's nvidia-dali-cuda120 wheel, about 424 MB, which runs its CPU
#    operators without a GPU.
#
# The apt step needs root (or sudo); SKIP_APT=1 skips it (the packages are
# there already). VENV=<dir> puts the environment elsewhere (then export
# SLUICE_PEER_PYTHON=<dir>/bin/python); DATARAX_VENV=<dir> puts Datarax's
# elsewhere (then export SLUICE_DATARAX_PYTHON=<dir>/bin/python).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$here/.venv-peers}
datarax_venv=${DATARAX_VENV:-$here/.venv-datarax}
streaming_venv=${STREAMING_VENV:-$here/.venv-streaming}

if [ "${SKIP_APT:-0}" != 1 ]; then
    sudo=
    [ "$(id -u)" = 0 ] || sudo=sudo
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update
    $sudo apt-get install -y --no-install-recommends python3 python3-venv python3-numpy python3-xxhash \
        python3-torch python3-torchvision libopencv-dev libturbojpeg0-dev pkg-config
fi
/usr/bin/python3 -c 'import numpy, torch; print("system: numpy", numpy.__version__, "torch", torch.__version__)'

# The pins were resolved together on Python 3.11 (Debian 12); change them
# together.
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    grain==0.2.18 \
    tensorflow-cpu==2.21.0 \
    'jax[cpu]==0.10.2' jaxlib==0.10.2 \
    numpy==2.4.6 \
    xxhash==3.5.0
"$venv/bin/python" -c '
from importlib.metadata import version
for name in ("grain", "tensorflow-cpu", "jax", "numpy", "xxhash"):
    print("venv:", name, version(name))
'

[ -x "$datarax_venv/bin/python" ] || /usr/bin/python3 -m venv "$datarax_venv"
"$datarax_venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/ci/peers-datarax.txt"
"$datarax_venv/bin/python" -c '
from importlib.metadata import version
for name in ("datarax", "jax", "flax", "grain", "numpy", "xxhash"):
    print("datarax venv:", name, version(name))
'

[ -x "$streaming_venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$streaming_venv"
"$streaming_venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    -r "$here/ci/peers-streaming.txt"
"$streaming_venv/bin/python" -c '
from importlib.metadata import version
import streaming, torch, torchvision
print("streaming venv: mosaicml-streaming", version("mosaicml-streaming"), "torch", torch.__version__,
      "torchvision", torchvision.__version__)
'

# 5. Hugging Face Datasets and WebDataset, each in a virtual environment of
#    its own, every package pinned (ci/peers-hf-datasets.txt,
#    ci/peers-webdataset.txt): <repo>/.venv-hf runs peer:hf-datasets unless
#    SLUICE_HF_PYTHON names another Python (HF_VENV=<dir> puts it elsewhere),
#    <repo>/.venv-wds runs peer:webdataset unless SLUICE_WDS_PYTHON does
#    (WDS_VENV=<dir>). Then (6.) SPDL, Ray Data and Deep Lake the same way.
for pair in "${HF_VENV:-$here/.venv-hf}:hf-datasets:datasets" "${WDS_VENV:-$here/.venv-wds}:webdataset:webdataset" \
    "$here/.venv-spdl:spdl:spdl" "$here/.venv-ray:ray:ray" "$here/.venv-deeplake:deeplake:deeplake" \
    "${TORCH_VENV:-$here/.venv-torch}:torch:torch" "${DALI_VENV:-$here/.venv-dali}:dali:nvidia-dali-cuda120"; do
    dir=${pair%%:*}; rest=${pair#*:}; req=${rest%%:*}; name=${rest#*:}
    [ -x "$dir/bin/python" ] || /usr/bin/python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/ci/peers-$req.txt"
    "$dir/bin/python" -c "from importlib.metadata import version; print('$req venv: $name', version('$name'))"
done

# 7. PyTorch 2 (7.) is in <repo>/.venv-torch (ci/peers-torch.txt, above): it
#    runs peer:torch, peer:torch-idiomatic(-w2), peer:litdata (LitData
#    needs torch >= 2.4) and peer:energon (Megatron Energon needs torch 2),
#    unless SLUICE_TORCH_PYTHON names another Python. Its wheel brings NVIDIA's CUDA
#    libraries as dependencies, unused on a CPU machine: a large download
#    (about 3 GB), not an obstacle. FFCV (peer:ffcv) has a venv of its own,
#    <repo>/.venv-ffcv (FFCV_VENV=<dir>, or SLUICE_FFCV_PYTHON), on the same
#    PyTorch (ci/peers-ffcv.txt): its C extension builds against Debian's
#    OpenCV and libjpeg-turbo found through pkg-config (the apt step).
ffcv_venv=${FFCV_VENV:-$here/.venv-ffcv}
[ -x "$ffcv_venv/bin/python" ] || /usr/bin/python3 -m venv "$ffcv_venv"
"$ffcv_venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/ci/peers-ffcv.txt"
"$ffcv_venv/bin/python" -c "from importlib.metadata import version; print('ffcv venv: ffcv', version('ffcv'))"
