// plan_cmd.hpp — `umlos plan`: run a TMMU strategy module on an interval
// file, check the plan, print metrics / JSON / SVG (docs/tmmu.md).
#pragma once

#include <string>
#include <vector>

#include "plan/intervals.hpp"
#include "plan/phase_timer.hpp"
#include "plan/plan_output.hpp"

namespace umlos {

// `args` are the words after `umlos plan`. Returns the process exit status:
// 0 on success, umlos::exit_code_for(code) after printing the failure and
// its code name on stderr.
int cmd_plan(const std::vector<std::string>& args);

namespace plan {

// Loads `module_path`, runs strategy `strategy` on `set` through a Host, and
// checks the result with check_plan (the slot-optimality check for
// UML_OS.TMMU.PlanMemory_v2). Throws umlos::Failure; module messages that
// name "tensor #i" get the tensor's id appended. `timer`, when given, gets
// the phases load, request, plan, check, metrics.
PlanReport run_strategy(const IntervalSet& set, const std::string& module_path, const std::string& strategy,
                        const std::vector<std::string>& options, PhaseTimer* timer = nullptr);

// <folder of the running executable>/modules/libumlos_tmmu.so
std::string default_module_path();

}  // namespace plan
}  // namespace umlos
