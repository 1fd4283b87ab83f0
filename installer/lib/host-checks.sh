# shellcheck shell=bash
# What the appliance's install.sh and a worker host's install-worker.sh both find out about the host (sourced by
# both; install.sh reads it from app.tar, install-worker.sh from lib/ of the agent's distribution). Each function
# prints a fact or fails; the callers decide what it means and say it their way (ok/warn/FAIL, log/warn/fail).

# This CPU's architecture as Node names it (x64, arm64; else what uname -m says): what bundles are built for.
host_arch() {
  case $(uname -m) in
    x86_64) echo x64 ;;
    aarch64) echo arm64 ;;
    *) uname -m ;;
  esac
}

# How many NVIDIA GPUs the host has, whether or not a driver runs them: display and 3D controllers (PCI class 0x03xxxx)
# of vendor 0x10de. VP_PCI_DEVICES replaces /sys/bus/pci/devices (tests).
nvidia_gpu_count() {
  local device count=0
  for device in "${VP_PCI_DEVICES:-/sys/bus/pci/devices}"/*; do
    [ "$(cat "$device/vendor" 2>/dev/null)" = 0x10de ] && [[ $(cat "$device/class" 2>/dev/null) == 0x03* ]] && count=$((count + 1))
  done
  echo "$count"
}

# The NVIDIA driver's version and how many GPUs it runs ("550.54.14 2"), as nvidia-smi says; fails without a working
# driver.
nvidia_driver() {
  local versions
  versions=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null) && [ -n "$versions" ] || return 1
  printf '%s %s\n' "$(head -n 1 <<<"$versions")" "$(wc -l <<<"$versions")"
}

# Whether containers can get NVIDIA GPUs: Docker hands them to a container that asks (--gpus, the worker agent's
# device requests) through the NVIDIA Container Toolkit's hook, which dockerd looks for on its PATH when it starts.
nvidia_container_toolkit() { command -v nvidia-container-runtime-hook >/dev/null 2>&1; }

# The Docker engine: "missing" (no docker command), "stopped" (it does not answer) or "running".
docker_engine_state() {
  if ! command -v docker >/dev/null 2>&1; then
    echo missing
  elif docker info >/dev/null 2>&1; then
    echo running
  else
    echo stopped
  fi
}
