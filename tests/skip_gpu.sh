# skip_gpu.sh — sourced by the tests/gpu_*.sh scripts: the skips they share. A skipping test prints "SKIP: reason"
# first and exits 77 (SKIP_RETURN_CODE; tests/skip_reasons.sh prints the reasons after the run).

# Skips the test on a machine without an NVIDIA driver.
skip_without_driver() {
  if [ ! -e /proc/driver/nvidia/version ] && ! ldconfig -p 2>/dev/null | grep -q libcuda.so.1; then
    echo "SKIP: no NVIDIA driver on this machine"
    exit 77
  fi
}

# Skips the test unless GPU 0 is sm_90 (H100, H200); $1 says what needs it.
skip_unless_sm90() {
  local cc
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
  if [ "$cc" != "9.0" ]; then
    echo "SKIP: $1 needs an sm_90 GPU (H100, H200); GPU 0 is compute capability '${cc:-unknown}'"
    exit 77
  fi
}
