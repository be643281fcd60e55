// job_folder.hpp — where a run's folder lies (spec 004 0.N): the job folder
// under UML_OS_ROOT/namespaces/<org>/<unit>/<project>/<experiment>, named by
// job_id (procedure.hpp), and the numbered siblings of a job run again.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "manifest.hpp"
#include "run_folder.hpp"

namespace umlos {

// UML_OS_ROOT/namespaces/<parts...>/<job_id>, each part a plain name (the
// key is named in NAMESPACE_VIOLATION otherwise), the result checked to stay
// inside the namespaces tree (no symbolic link leads out).
std::filesystem::path resolve_namespace_path(const Manifest& m,
                                             const std::vector<std::pair<std::string, std::string>>& parts,
                                             const std::string& job_id);

// Creates and holds `job_folder`, or the first of "<job_folder>.1", ".2", ...
// it can create and hold.
void create_next_job_folder(RunFolder& folder, const std::string& job_folder);

}  // namespace umlos
