#!/usr/bin/env python3
"""Which `yolo export format=...` targets this trainer environment can produce, offline.

Prints one JSON object to stdout:
  {"ultralytics": "8.4.190", "exporters": ["torchscript", ...], "missing": {"openvino": "why", ...},
   "export_only": {"coreml": "why its artifact cannot be predicted here"}}
A format is listed in "exporters" when every package ultralytics 8.4.190's exporter check_requirements()s is installed
at an accepted version, the torch version it asserts is met, and its modules import (each in a child process, so a
broken native package is reported as missing instead of crashing the probe). With YOLO_AUTOINSTALL=false a missing
package would fail the export, so these checks mirror ultralytics/engine/exporter.py and ultralytics/utils/export/*.
Never downloads, never installs; a few seconds. Exit status 0 whenever JSON was printed.
"""

import importlib.metadata as metadata
import json
import os
import platform
import shutil
import subprocess
import sys

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

LINUX_X86 = platform.system() == "Linux" and platform.machine() in {"x86_64", "AMD64"}
IMPORT_TIMEOUT_S = 30

# format -> what its export (and the matching predict backend) needs, as ultralytics 8.4.190 checks it.
#   packages: requirements as check_requirements() gets them; a tuple is interchangeable candidates (any one).
#   torch: the torch version the exporter asserts. modules: imported to prove the native parts load.
#   commands: executables on PATH. platform: False when the exporter asserts another OS/arch.
ONNX_STACK = ["onnx>=1.12.0,<2.0.0", "onnxslim>=0.1.82", ("onnxruntime", "onnxruntime-gpu")]
TF_STACK = [
    "tensorflow>=2.0.0,<=2.19.0",
    "onnx2tf>=1.26.3,<1.29.0",
    "tf_keras<=2.19.0",
    "sng4onnx>=1.0.1",
    "onnx_graphsurgeon>=0.3.26",
    "ai-edge-litert>=1.2.0",
    "protobuf>=5",
    *ONNX_STACK,
]
FORMATS = {
    "torchscript": {},
    "onnx": {"packages": ONNX_STACK, "modules": ["onnx", "onnxslim", "onnxruntime"]},
    "openvino": {"packages": ["openvino>=2024.0.0"], "torch": "2.1", "modules": ["openvino"]},
    "engine": {"packages": [("tensorrt", "tensorrt-cu12", "tensorrt-cu13")], "modules": ["tensorrt"], "cuda": True},
    "coreml": {"packages": ["coremltools>=9.0", "numpy<=2.3.5"], "torch": "1.11", "modules": ["coremltools"]},
    "coreai": {"packages": ["coreai-torch>=0.4.3"], "torch": "2.8", "modules": ["coreai_torch"]},
    "saved_model": {"packages": TF_STACK, "modules": ["tensorflow", "onnx2tf"]},
    "pb": {"packages": TF_STACK, "modules": ["tensorflow", "onnx2tf"]},
    "edgetpu": {"packages": TF_STACK, "modules": ["tensorflow", "onnx2tf"], "commands": ["edgetpu_compiler"],
                "platform": LINUX_X86},
    "litert": {"packages": ["litert-torch>=0.10.0", "ai-edge-litert>=2.3.0"], "modules": ["litert_torch"],
               "platform": LINUX_X86 or platform.system() == "Darwin"},
    "paddle": {"packages": [("paddlepaddle>=3.0.0,<3.3.0", "paddlepaddle-gpu>=3.0.0,<3.3.0"), "x2paddle"],
               "modules": ["paddle", "x2paddle"], "x2paddle_torch_version": True},
    "mnn": {"packages": ["MNN>=2.9.6"], "torch": "1.10", "modules": ["MNN", "MNN.tools.mnnconvert"]},
    "ncnn": {"packages": ["ncnn", "pnnx==20260526"], "modules": ["ncnn", "pnnx"]},
    "imx": {"packages": ["model-compression-toolkit>=2.4.1", "edge-mdt-cl>=1.1.0", "edge-mdt-tpc>=1.2.0",
                         "pydantic<2.12", "imx500-converter>=3.18.2"], "torch": "2.9",
            "modules": ["model_compression_toolkit"], "commands": ["java"]},
    "rknn": {"packages": ["rknn-toolkit2>=2.3.2,<2.5", "onnx>=1.16.1,<1.19.0"], "modules": ["rknn.api"],
             "platform": platform.system() == "Linux"},
    "executorch": {"packages": ["executorch"], "torch": "2.9", "modules": ["executorch.exir"]},
    "axelera": {"packages": ["axelera-devkit", "axelera-rt"], "torch": "2.8", "modules": ["axelera"]},
    "deepx": {"packages": ["dx_com>=2.4.1"], "torch": "2.8", "modules": ["dx_com"]},
    "qnn": {"packages": ["onnxruntime-qnn", *ONNX_STACK[:2]], "modules": ["onnxruntime"]},
    "hailo": {"packages": ["hailo_sdk_client"], "modules": ["hailo_sdk_client"], "platform": LINUX_X86},
    "ascend": {"commands": ["atc"], "platform": platform.system() == "Linux"},
    "xilinx": {"packages": ["amd-quark>=0.13.0,<0.14.0", ("onnxruntime", "onnxruntime-gpu", "onnxruntime-vitisai")],
               "modules": ["quark.onnx"], "platform": platform.system() == "Linux"},
}
# Exported fine here, but its runtime exists only elsewhere, so its artifact cannot be predicted in this environment.
EXPORT_ONLY = {"coreml": "a .mlpackage predicts only on macOS (coremltools has no Linux runtime)"}


def release(version):
    """(major, minor, patch) of a version string; Debian's torch reports '1.13.0a0+gitunknown'."""
    try:
        return Version(version).release
    except InvalidVersion:
        return ()


def installed(requirement):
    """None when the requirement (or one of its interchangeable candidates) is met, else why not."""
    candidates = requirement if isinstance(requirement, tuple) else (requirement,)
    problems = []
    for candidate in candidates:
        req = Requirement(candidate)
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            problems.append(f"{req.name} not installed")
            continue
        # ultralytics' check_version compares numeric parts only, so pre-releases and local builds count as releases.
        if not req.specifier or req.specifier.contains(".".join(map(str, release(version))), prereleases=True):
            return None
        problems.append(f"{req.name}=={version} installed, {candidate} needed")
    return " / ".join(problems)


def static_reason(fmt, spec, torch_version):
    """Why `fmt` cannot export here, from metadata and the platform alone (no imports); None when nothing found."""
    if spec.get("platform") is False:
        return f"not supported on {platform.system()} {platform.machine()}"
    if spec.get("torch") and release(torch_version) < release(spec["torch"]):
        return f"ultralytics' {fmt} export needs torch>={spec['torch']}, this environment has torch {torch_version}"
    for requirement in spec.get("packages", []):
        if problem := installed(requirement):
            return problem
    for command in spec.get("commands", []):
        if not shutil.which(command):
            return f"{command} not on PATH"
    if spec.get("x2paddle_torch_version"):
        # x2paddle's pytorch2paddle parses torch.__version__ as three integers and aborts ('PyTorch is not installed')
        # when it cannot, so the export writes an empty model.
        try:
            patch = torch_version.split(".")[2].split("+")[0]
            int(patch)
        except (IndexError, ValueError):
            return f"x2paddle cannot parse torch version {torch_version!r} and writes an empty model"
    return None


def import_check(spec):
    """Child process importing the format's modules (and asking for CUDA when required)."""
    code = "".join(f"import {m}\n" for m in spec.get("modules", []))
    if spec.get("cuda"):
        code += "import torch, sys\nsys.exit(0 if torch.cuda.is_available() else 3)\n"
    env = {**os.environ, "YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "false", "OPENVINO_TELEMETRY_OPT_OUT": "1"}
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, text=True)


def import_reason(spec, proc):
    try:
        _, err = proc.communicate(timeout=IMPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"importing {', '.join(spec['modules'])} took over {IMPORT_TIMEOUT_S}s"
    if proc.returncode == 0:
        return None
    if spec.get("cuda") and proc.returncode == 3:
        return "no CUDA device"
    last = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return f"import {', '.join(spec.get('modules', []))} failed: {last[:200]}"


def probe():
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "0"
    try:
        ultralytics_version = metadata.version("ultralytics")
    except metadata.PackageNotFoundError:
        ultralytics_version = None
    missing, checks = {}, {}
    for fmt, spec in FORMATS.items():
        try:
            reason = static_reason(fmt, spec, torch_version)
        except Exception as e:  # a malformed package metadata must not break the probe
            reason = f"check failed: {type(e).__name__}: {e}"
        if reason:
            missing[fmt] = reason
        elif spec.get("modules") or spec.get("cuda"):
            checks[fmt] = import_check(spec)
    for fmt, proc in checks.items():
        if reason := import_reason(FORMATS[fmt], proc):
            missing[fmt] = reason
    exporters = [fmt for fmt in FORMATS if fmt not in missing]
    return {
        "ultralytics": ultralytics_version,
        "exporters": exporters,
        "missing": missing,
        "export_only": {fmt: why for fmt, why in EXPORT_ONLY.items() if fmt in exporters},
    }


if __name__ == "__main__":
    try:
        result = probe()
    except Exception as e:  # still one JSON object: no format is claimed when the probe itself fails
        result = {"ultralytics": None, "exporters": [], "missing": {}, "export_only": {},
                  "error": f"{type(e).__name__}: {e}"}
    print(json.dumps(result))
