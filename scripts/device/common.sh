# Sourced by the device scripts: the environment every GPU run here uses.
# NVLink multicast stays off (the device machines' rule), also for spawned processes.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
nccl_dir=$(bash scripts/nccl-lib.sh)
export LD_LIBRARY_PATH="${nccl_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Issue 27: cuBLASLt for the GPU matmul (PyTorch's wheel keeps it in nvidia/cu13/lib).
cublaslt_dir=$(bash scripts/cublaslt-lib.sh)
export LD_LIBRARY_PATH="${cublaslt_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
O=${OUT:-/tmp/device-out}
mkdir -p "$O"
T=.gpu/tests
E=.gpu/examples
stage() { echo; echo "=== $* [$(date +%T)]"; }
# Runs one module of the integration-test binary `it` (`tests/it/<module>.rs`), keeps its log
# under $O (named by $TAG if set), prints only result and failure lines. THREADS test threads
# (default 1): the GPU variants of the op modules compile their kernels test by test, and
# `pointwise` took over 240 s on one thread but 32 s on 8 (H200 host, 16 cores).
tests() { local name=$1; shift; local log="$O/${TAG:-$name}.log"
  timeout "${LIMIT:-240}" "$T/it" "$name::" --test-threads="${THREADS:-1}" "$@" >"$log" 2>&1; local rc=$?
  grep -E "^test result|FAILED|panicked|^failures:|skipped|peer access" "$log" | grep -v "^test .* ok$" | head -40; echo "[$name exit $rc]"; }
