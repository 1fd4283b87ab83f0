#!/usr/bin/env bash
# Create/refresh the trainer venv at $1 on top of Debian's python3 + numpy/pillow (the apt
# packages in apt-packages.txt must already be installed), and make ultralytics fully offline.
# Shared by build-trainer-env.sh (host) and build-trainer-image.sh (run inside the image's chroot).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:?usage: setup-env.sh VENV_DIR}
cfg=$venv/yolo-config
log() { printf '[trainer-setup] %s\n' "$*"; }

# Offline defaults. ultralytics reads these at import time; they are also written to
# $venv/trainer.env and, as setdefault()s, to a .pth file so the venv's python is offline by default.
# YOLO_OFFLINE: skips its DNS "is online" probe, so pip-update check, telemetry and downloads never run.
# YOLO_AUTOINSTALL=false: never pip-install a missing optional requirement at runtime.
# MPLCONFIGDIR: a writable matplotlib cache, pre-built below so plots don't rescan fonts per job.
export YOLO_CONFIG_DIR=$cfg YOLO_OFFLINE=1 YOLO_AUTOINSTALL=false MPLCONFIGDIR=$cfg/matplotlib
mkdir -p "$cfg/Ultralytics" "$MPLCONFIGDIR"

# --system-site-packages: numpy/pillow/pyyaml/requests come from Debian; torch/torchvision from PyPI (constraints.txt),
# installed into the venv, so they shadow a Debian python3-torch 1.13 left on the host.
if [ ! -x "$venv/bin/python" ]; then
  log "creating venv $venv (Debian /usr/bin/python3, system site-packages)"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
pip=("$venv/bin/python" -m pip install --no-input --disable-pip-version-check -c "$here/constraints.txt")
log "pip: ultralytics runtime deps"
"${pip[@]}" -r "$here/requirements.txt"
# --no-deps: ultralytics' metadata wants opencv-python (GUI build) and GPU/cloud extras; the
# constraints pin keeps the version exact.
log "pip: ultralytics (no deps)"
"${pip[@]}" --no-deps ultralytics ultralytics-thop

log "pip: export toolchains (requirements-export.txt)"
"${pip[@]}" -r "$here/requirements-export.txt"
# Importing MNN's converter runs MNN/tools/utils/log.py, which pip-installs aliyun-log-python-sdk when missing and
# reports every conversion to Alibaba Cloud. An ImportError there makes MNN fall back to no logger (upstream's except).
mnn=$("$venv/bin/python" -c 'import importlib.util as u; print(u.find_spec("MNN").submodule_search_locations[0])')
printf '%s\n' '# Replaced by the trainer setup (installer/trainer/setup-env.sh): no telemetry, no pip at conversion time.' \
  'raise ImportError("MNN conversion telemetry is disabled in the offline trainer environment")' >"$mnn/tools/utils/log.py"
rm -rf "$mnn/tools/utils/__pycache__"

"$venv/bin/python" - <<'EOF'
import sys, torch, torchvision, cv2, ultralytics
assert torch.__file__.startswith(sys.prefix), f"torch is not the venv's (PyPI's): {torch.__file__}"
print(f"[trainer-setup] torch {torch.__version__}, torchvision {torchvision.__version__}, "
      f"opencv {cv2.__version__}, ultralytics {ultralytics.__version__}")
EOF

printf 'YOLO_CONFIG_DIR=%s\nYOLO_OFFLINE=1\nYOLO_AUTOINSTALL=false\nMPLCONFIGDIR=%s\n' "$cfg" "$MPLCONFIGDIR" >"$venv/trainer.env"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$venv/bin/python" - "$venv/trainer.env" "$site/vp_trainer_offline.pth" <<'EOF'
import sys
env = dict(l.strip().split("=", 1) for l in open(sys.argv[1]) if "=" in l)
open(sys.argv[2], "w").write("import os; " + "; ".join(f"os.environ.setdefault({k!r}, {v!r})" for k, v in env.items()) + "\n")
EOF

# runs_dir is relative: each job's runs (and its last.pt, which its host uploads as the resume point) land in the
# job's own working directory; datasets stay cached in the environment.
log "ultralytics settings in $cfg/Ultralytics (sync/telemetry and integrations off)"
"$venv/bin/yolo" settings sync=False clearml=False comet=False dvc=False mlflow=False raytune=False \
  tensorboard=False wandb=False vscode_msg=False openvino_msg=False \
  runs_dir=runs weights_dir="$cfg/weights" datasets_dir="$cfg/datasets" >/dev/null
# check_font() downloads Arial.ttf / Arial.Unicode.ttf into the config dir unless present there.
for f in Arial.ttf Arial.Unicode.ttf; do
  cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf "$cfg/Ultralytics/$f"
done
"$venv/bin/python" -c 'import matplotlib.font_manager'

# The export-format probe, runnable as $venv/bin/vp-probe-exporters (the image has it on PATH); the build fails if a
# toolchain requirements-export.txt installs does not load.
{ echo "#!$venv/bin/python"; tail -n +2 "$here/probe-exporters.py"; } >"$venv/bin/vp-probe-exporters"
chmod 0755 "$venv/bin/vp-probe-exporters"
"$venv/bin/vp-probe-exporters" | "$venv/bin/python" -c '
import json, sys
probe = json.load(sys.stdin)
absent = {f: probe["missing"].get(f) for f in ("torchscript", "onnx", "openvino", "ncnn", "mnn", "coreml") if f not in probe["exporters"]}
assert not absent, f"export toolchains missing: {absent}"
print("[trainer-setup] export formats:", " ".join(probe["exporters"]))'
log "ready: $venv (env: $venv/trainer.env)"
