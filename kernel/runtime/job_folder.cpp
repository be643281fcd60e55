// job_folder.cpp — job folders under UML_OS_ROOT (job_folder.hpp).
#include "job_folder.hpp"

#include <cctype>
#include <cstdlib>

#include "error.hpp"
#include "procedure.hpp"

namespace umlos {
namespace fs = std::filesystem;

fs::path resolve_namespace_path(const Manifest& m, const std::vector<std::pair<std::string, std::string>>& parts,
                                const std::string& job_id) {
  // UML_OS_ROOT/namespaces itself must be a folder inside the root: a
  // symbolic link there would move every job folder outside UML_OS_ROOT.
  const fs::path root = fs::weakly_canonical(fs::absolute(fs::path(umlos_root())));
  const fs::path base = fs::weakly_canonical(fs::absolute(fs::path(umlos_root()) / "namespaces"));
  if (base != root / "namespaces") {
    throw Failure(UMLOS_NAMESPACE_VIOLATION, "'" + (fs::path(umlos_root()) / "namespaces").string() +
                                                 "' resolves to '" + base.string() + "', outside UML_OS_ROOT '" +
                                                 root.string() + "' (a symbolic link?); make it a plain folder");
  }
  fs::path p = base;
  for (const auto& [key, value] : parts) {
    bool ok = !value.empty() && value != "." && value != ".." && value.size() <= 128;
    for (char ch : value) {
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.')) ok = false;
    }
    if (!ok) {
      throw Failure(UMLOS_NAMESPACE_VIOLATION,
                    m.where("namespace." + key) + ": key 'namespace." + key + "' is '" + value +
                        "'; expected a plain name of letters, digits, '_', '-' and '.' (not '.' or '..'), at most "
                        "128 characters, so the job folder stays inside UML_OS_ROOT/namespaces");
    }
    p /= value;
  }
  // The job folder itself is not resolved: a link planted under its name is
  // refused when the run opens the folder (O_NOFOLLOW), not followed.
  const fs::path resolved = fs::weakly_canonical(p) / job_id;
  const std::string rs = resolved.string(), bs = base.string() + "/";
  if (rs.compare(0, bs.size(), bs) != 0) {
    throw Failure(UMLOS_NAMESPACE_VIOLATION, "the job folder '" + resolved.string() + "' escapes '" + base.string() +
                                                 "' (a symbolic link inside UML_OS_ROOT?)");
  }
  return resolved;
}

std::string job_id(const Manifest& m) { return to_hex(m.manifest_hash).substr(0, 8); }

// The same manifest run again (or while it still runs) is another run of the
// same job: it takes "<job folder>.1", ".2", ... — the first one it can
// create and hold — so the user's command works every time and no run ever
// writes into another's folder. An explicit --run-dir is never redirected.
void create_next_job_folder(RunFolder& folder, const std::string& job_folder) {
  constexpr int kMaxRunsPerJob = 10000;
  for (int n = 0; n < kMaxRunsPerJob; ++n) {
    const std::string candidate = n == 0 ? job_folder : job_folder + "." + std::to_string(n);
    try {
      folder.create(candidate);
      return;
    } catch (const Failure& f) {
      if (f.code() != UMLOS_ALREADY_EXISTS && f.code() != UMLOS_FAILED_PRECONDITION) throw;
    }
  }
  throw Failure(UMLOS_RESOURCE_EXHAUSTED, "the job folder '" + job_folder + "' and its " +
                                              std::to_string(kMaxRunsPerJob - 1) +
                                              " numbered siblings all hold runs; remove old runs or use --run-dir");
}

std::string umlos_root() {
  const char* env = std::getenv("UML_OS_ROOT");
  return (env && *env) ? std::string(env) : std::string("umlos_root");
}

}  // namespace umlos
