#include "bootstrap/pmix_bootstrap.hpp"

#include <pmix.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bootstrap/timeout.hpp"

namespace rma::bootstrap {
namespace {

using Bytes = std::vector<std::uint8_t>;
// Our keys live under this prefix so they never meet the launcher's own.
constexpr std::string_view kPrefix = "rma.";

Status pmix_error(const std::string& what, pmix_status_t rc) {
  return unavailable("PMIx " + what + " failed: " + PMIx_Error_string(rc) + " (" + std::to_string(rc) + ")");
}

class PmixRank final : public Bootstrap {
 public:
  PmixRank(const pmix_proc_t& me, int size, int timeout_s) : me_(me), size_(size), timeout_s_(timeout_s) {
    PMIX_LOAD_PROCID(&all_, me.nspace, PMIX_RANK_WILDCARD);
  }
  ~PmixRank() override { PMIx_Finalize(nullptr, 0); }

  int rank() const noexcept override { return static_cast<int>(me_.rank); }
  int size() const noexcept override { return size_; }
  std::string_view kind() const noexcept override { return "pmix"; }

  Status put(std::string_view key, std::span<const std::uint8_t> value) override {
    if (key.empty()) return invalid_argument("bootstrap put: empty key");
    const std::string k = std::string(kPrefix) + std::string(key);
    if (k.size() > PMIX_MAX_KEYLEN) {
      return invalid_argument("bootstrap put: key '" + std::string(key) + "' is longer than PMIx allows (" +
                              std::to_string(PMIX_MAX_KEYLEN - kPrefix.size()) + " characters)");
    }
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = const_cast<char*>(reinterpret_cast<const char*>(value.data()));
    v.data.bo.size = value.size();
    const pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, k.c_str(), &v);  // copies the value
    return rc == PMIX_SUCCESS ? Status{} : pmix_error("put of '" + std::string(key) + "'", rc);
  }

  Status fence() override {
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) return pmix_error("commit", rc);
    return fence_with("fence", true);
  }

  Result<Bytes> get(int rank, std::string_view key) override {
    if (rank < 0 || rank >= size_) {
      return invalid_argument("bootstrap get: rank " + std::to_string(rank) + " is outside 0.." + std::to_string(size_ - 1));
    }
    const std::string k = std::string(kPrefix) + std::string(key);
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me_.nspace, static_cast<pmix_rank_t>(rank));
    // Only what the last collecting fence brought: never wait for a key the
    // peer may never put.
    pmix_info_t info;
    bool optional = true;
    PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &optional, PMIX_BOOL);
    pmix_value_t* v = nullptr;
    const pmix_status_t rc = PMIx_Get(&p, k.c_str(), &info, 1, &v);
    PMIX_INFO_DESTRUCT(&info);
    if (rc == PMIX_ERR_NOT_FOUND) {
      return not_found("bootstrap get: rank " + std::to_string(rank) + " put nothing under '" + std::string(key) +
                       "' before the last fence");
    }
    if (rc != PMIX_SUCCESS) return pmix_error("get of '" + std::string(key) + "' from rank " + std::to_string(rank), rc);
    Bytes out;
    if (v->type == PMIX_BYTE_OBJECT) {
      out.assign(reinterpret_cast<const std::uint8_t*>(v->data.bo.bytes),
                 reinterpret_cast<const std::uint8_t*>(v->data.bo.bytes) + v->data.bo.size);
    }
    const bool ok = v->type == PMIX_BYTE_OBJECT;
    PMIX_VALUE_RELEASE(v);
    if (!ok) return failed_precondition("bootstrap get: '" + std::string(key) + "' from rank " + std::to_string(rank) + " is not a byte string");
    return out;
  }

  Status barrier() override { return fence_with("barrier", false); }

  Result<std::vector<Bytes>> allgather(std::span<const std::uint8_t> mine) override {
    const std::string key = "allgather." + std::to_string(allgather_seq_++);
    RMA_RETURN_IF_ERROR(put(key, mine));
    RMA_RETURN_IF_ERROR(fence());
    std::vector<Bytes> out;
    out.reserve(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      RMA_ASSIGN_OR_RETURN(Bytes b, get(r, key));
      out.push_back(std::move(b));
    }
    return out;
  }

  [[noreturn]] void abort(int exit_code, std::string_view message) noexcept override {
    const std::string m = "rank " + std::to_string(me_.rank) + " aborted the job: " + std::string(message);
    std::fprintf(stderr, "rma: %s\n", m.c_str());
    std::fflush(nullptr);
    PMIx_Abort(exit_code == 0 ? 1 : exit_code, m.c_str(), nullptr, 0);
    std::_Exit(exit_code == 0 ? 1 : exit_code);
  }

 private:
  Status fence_with(const char* what, bool collect) {
    pmix_info_t info[2];
    bool yes = collect;
    int timeout = timeout_s_;
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    const pmix_status_t rc = PMIx_Fence(&all_, 1, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc == PMIX_ERR_TIMEOUT) {
      return timeout_error(std::string("bootstrap ") + what + ": PMIx fence timed out after " + std::to_string(timeout_s_) +
                           " s (RMA_BOOTSTRAP_TIMEOUT); some ranks did not arrive");
    }
    return rc == PMIX_SUCCESS ? Status{} : pmix_error(what, rc);
  }

  pmix_proc_t me_;
  pmix_proc_t all_;
  int size_;
  int timeout_s_;
  std::uint64_t allgather_seq_ = 0;
};

}  // namespace

bool pmix_available() noexcept { return true; }

Result<std::unique_ptr<Bootstrap>> connect_to_pmix() {
  RMA_ASSIGN_OR_RETURN(auto timeout, configured_timeout());
  pmix_proc_t me;
  pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS) return pmix_error("init (is this process started by a PMIx launcher?)", rc);
  pmix_proc_t all;
  PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* v = nullptr;
  rc = PMIx_Get(&all, PMIX_JOB_SIZE, nullptr, 0, &v);
  if (rc != PMIX_SUCCESS) {
    PMIx_Finalize(nullptr, 0);
    return pmix_error("get of the job size", rc);
  }
  std::uint32_t size = 0;
  if (v->type == PMIX_UINT32) size = v->data.uint32;
  PMIX_VALUE_RELEASE(v);
  if (size == 0 || me.rank >= size) {
    PMIx_Finalize(nullptr, 0);
    return failed_precondition("PMIx reports rank " + std::to_string(me.rank) + " of a job of size " + std::to_string(size));
  }
  return std::unique_ptr<Bootstrap>(
      std::make_unique<PmixRank>(me, static_cast<int>(size), static_cast<int>(timeout.count() / 1000)));
}

}  // namespace rma::bootstrap
