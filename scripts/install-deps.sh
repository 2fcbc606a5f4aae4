#!/usr/bin/env bash
# Installs hpusim's build and test dependencies from Debian packages. Idempotent: it does nothing
# when every package is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libsystemc-dev verilator
  libboost-dev libboost-program-options-dev
  libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-venv python3-dev
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "hpusim: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
apt_opts=(-o DPkg::Lock::Timeout=300 -y -q)
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}"
