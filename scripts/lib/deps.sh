# shellcheck shell=bash
# Debian packages librma needs to build, test and package. Source this file,
# then call rma_install_deps [extra packages...].
#
# Idempotent: packages already installed are left alone and apt-get is not
# run at all when nothing is missing. Prints one line per action it takes.

# What each package is for is listed in README.md ("Dependencies").
RMA_DEBIAN_PACKAGES=(
  cmake g++ make pkgconf binutils   # toolchain; binutils: readelf/objdump (packaging test)
  libgtest-dev libgmock-dev         # tests/
  libbenchmark-dev                  # bench/
  libibverbs-dev librdmacm-dev ibverbs-providers  # verbs provider
  dpdk-dev libdpdk-dev              # software RoCE v2 NIC (dpdk/)
  libisal-dev                       # ISA-L: ICRC (CRC32) for the RoCE v2 wire format (dpdk/wire/)
  tshark                            # decodes our pcap captures as RoCE v2 (wire tests)
  clang libclang-rt-14-dev          # libFuzzer for fuzz/ (parser fuzzing)
  lld                               # links the ~70 test and tool programs several times faster than ld.bfd
  libmpich-dev mpich                # MPI_Pack oracle for the datatype differential test
  iproute2                          # network namespaces and veth pairs for port tests
  libpmix-dev openmpi-bin           # PMIx bootstrap; Open MPI's mpirun launches the PMIx test
  libopenmpi-dev                    # Open MPI's <shmem.h> for oshcc: the oshmem side of bench/shmem/run_vs_oshmem.sh
)

# The soft-RoCE QEMU guest (scripts/softroce-vm): the emulator, the guest's
# userspace (busybox, rdma-core, perftest) and the tools that build its image.
# tcpdump watches the host side of the interop tap.
RMA_VM_PACKAGES=(
  qemu-system-x86 busybox-static cpio kmod
  rdma-core ibverbs-utils rdmacm-utils perftest
  tcpdump
)

# Slurm, for the tests only: srun --mpi=pmix on a private one-node cluster
# (tests/api_mp/run_srun_job.sh; munge comes with slurmd).
RMA_SLURM_PACKAGES=(slurmd slurmctld slurm-client)

# Runs apt-get as root, through sudo when we are not root.
_rma_apt() {
  if [[ $(id -u) -eq 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo DEBIAN_FRONTEND=noninteractive apt-get "$@"
  else
    echo "deps: need root (or sudo) to run apt-get $*" >&2
    return 1
  fi
}

# True when the package is installed (not merely known or half-configured).
_rma_pkg_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == "installed" ]]
}

_rma_apt_update() {
  local log="$1"
  echo "deps: apt-get update"
  if ! _rma_apt update >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "deps: apt-get update failed" >&2
    return 1
  fi
}

rma_install_deps() {
  local pkgs=("${RMA_DEBIAN_PACKAGES[@]}" "$@") missing=() p log rc=0
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps: dpkg-query not found; this is not a Debian system, install these yourself:" \
      "${pkgs[*]}" >&2
    return 1
  fi
  for p in "${pkgs[@]}"; do
    _rma_pkg_installed "$p" || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0

  log="$(mktemp "${TMPDIR:-/tmp}/rma-deps.XXXXXX")"
  _rma_apt_update "$log" || { rm -f "$log"; return 1; }
  echo "deps: apt-get install ${missing[*]}"
  _rma_apt install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]] && grep -qE 'Unable to locate package|has no installation candidate|404 +Not Found|Failed to fetch' "$log"; then
    # Stale package lists: refresh once and try again.
    _rma_apt_update "$log" || { rm -f "$log"; return 1; }
    echo "deps: apt-get install ${missing[*]} (retry)"
    rc=0
    _rma_apt install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1 || rc=$?
  fi
  if [[ $rc -ne 0 ]]; then
    tail -n 30 "$log" >&2
    echo "deps: apt-get install failed (status $rc)" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
  for p in "${missing[@]}"; do
    if ! _rma_pkg_installed "$p"; then
      echo "deps: $p is still not installed after apt-get install" >&2
      return 1
    fi
  done
}
