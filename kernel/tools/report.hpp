// report.hpp — `umlos report RUN_DIR -o report.html`: one self-contained
// HTML page (inline SVG and CSS, no script, no external resource) about a
// run, from its trace.jsonl (and failure.json, tape.bin, memory_plan.svg
// when present).
#pragma once

#include <string>
#include <vector>

namespace umlos {

// The page's text. Deterministic: the same run folder gives the same bytes.
// NOT_FOUND for a missing run folder or trace.jsonl; DATA_LOSS naming
// FILE:LINE for a trace line that is not a JSON object.
std::string render_report(const std::string& run_dir);

// render_report, written atomically (temp file, fsync, rename) to `out_file`.
void write_report(const std::string& run_dir, const std::string& out_file);

// `umlos report RUN_DIR -o FILE` (arguments after "report"). Usage errors
// throw boost::program_options::error.
int cmd_report(const std::vector<std::string>& args);

}  // namespace umlos
