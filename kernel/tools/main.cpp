// main.cpp — the `umlos` command (Boost.Program_options).
//
//   umlos run MANIFEST                       the spec 004 VI procedure
//   umlos hash FILE                          a module's SHA-256 and its manifest line
//   umlos manifest hash MANIFEST             manifest/policy/env hashes, replay token
//   umlos manifest canonical MANIFEST [-o F] the exact canonical CBOR bytes hashed
//   umlos manifest pin MANIFEST -o OUT       write module digests into a copy
//   umlos modules inspect FILE               what a module offers
//   umlos conformance FILE...                run every operator's test vectors
//   umlos rng philox --key K0,K1 --counter C0,C1,C2,C3 [--rounds R]
//   umlos plan FILE ...                      TMMU planning (docs/tmmu.md)
//   umlos exec IR [--mode M] [--json]        one ModelIR graph through the executor
//   umlos replay --verify RUN_DIR            rerun a run's manifest, compare the traces
//   umlos report RUN_DIR -o report.html      one self-contained HTML page about a run
//   umlos export RUN_DIR -o FILE             the trained parameters as safetensors
//
// Exit statuses: 0 success, 2 usage error, otherwise exit_code_for(failure
// code) as listed in docs/exit-codes.md.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "cli_parse.hpp"
#include "conformance.hpp"
#include "dataset.hpp"
#include "dataset_cmd.hpp"
#include "error.hpp"
#include "exec_cmd.hpp"
#include "export_cmd.hpp"
#include "fsutil.hpp"
#include "launch.hpp"
#include "loader.hpp"
#include "manifest.hpp"
#include "procedure.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "umlos_philox.h"

#if __has_include("plan/plan_cmd.hpp")
#include "plan/plan_cmd.hpp"
#define UMLOS_HAVE_PLAN 1
#endif

namespace po = boost::program_options;
using namespace umlos;

namespace {

constexpr int kUsageExit = 2;
// RUN_DIR/manifest.path holds one path (docs/security.md lists the readers).
constexpr uint64_t kManifestPathReadLimit = 64 << 10;

// JSON inputs are read with nlohmann::json, whose parse and type errors are
// exceptions of its own: one that a reader did not turn into a Failure is
// still the input's fault, never a bug of ours, so it leaves the command as
// INVALID_ARGUMENT naming the input (the library's message gives the byte
// position of a parse error) instead of INTERNAL.
template <typename Command>
int json_edge(const std::string& input, Command&& command) {
  try {
    return command();
  } catch (const nlohmann::json::exception& e) {
    throw Failure(UMLOS_INVALID_ARGUMENT, input + ": malformed or mistyped JSON: " + e.what());
  }
}

// The first argument that is not an option: the run folder that `replay`
// and `report` read (for naming it in messages).
std::string input_of(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].empty() && args[i][0] != '-') return args[i];
  return "the input";
}

#define UMLOS_STR2(x) #x
#define UMLOS_STR(x) UMLOS_STR2(x)
#define UMLOS_ABI_TEXT UMLOS_STR(UMLOS_ABI_MAJOR) "." UMLOS_STR(UMLOS_ABI_MINOR)

const char* kTopHelp =
    "umlos — deterministic ML training kernel (UML_OS " UMLOS_VERSION_STRING ", ABI " UMLOS_ABI_TEXT
    ")\n"
    "\n"
    "usage: umlos <command> [options]   (umlos <command> --help for each)\n"
    "\n"
    "commands:\n"
    "  run MANIFEST                      run the training procedure of spec 004 VI\n"
    "  hash FILE                         SHA-256 of a module and the manifest lines that pin it\n"
    "  manifest hash MANIFEST            manifest_hash, policy_hash, env_manifest_hash, replay_token\n"
    "  manifest canonical MANIFEST       the canonical CBOR bytes that manifest_hash covers\n"
    "  manifest pin MANIFEST -o OUT      copy a manifest with every module's digest filled in\n"
    "  modules inspect FILE              ABI version, operators, purity and RNG declarations\n"
    "  conformance FILE...               run every operator's test vectors under the kernel\n"
    "  rng philox --key K0,K1 --counter C0,C1,C2,C3 [--rounds R]\n"
    "                                    the Philox4x32 block function (hex words)\n"
    "  plan FILE                         plan tensor memory with a TMMU strategy module\n"
    "  exec IR [--mode forward|backward|inference] [--inputs FILE] [--json]\n"
    "                                    run one ModelIR graph through the executor module\n"
    "  replay --verify RUN_DIR           rerun the run's manifest and compare the traces (docs/checkpoint.md)\n"
    "  report RUN_DIR -o report.html     one self-contained HTML page: facts, curves, timelines\n"
    "  export RUN_DIR -o FILE            the trained parameters of a checkpoint as a safetensors file\n"
    "  dataset import|verify|list ...    data sets under UML_OS_ROOT/datasets (docs/data.md)\n";

// Parses `args` against `desc` (+ positionals); prints help and returns
// false when --help was given. Throws po::error on bad usage.
bool parse(const std::vector<std::string>& args, po::options_description& desc,
           const po::positional_options_description& pos, po::variables_map& vm, const std::string& usage) {
  return parse_command_line(args, desc, pos, vm, [&](const po::options_description& d) {
    std::cout << "usage: " << usage << "\n\n" << d << "\n";
  });
}

// The arguments of `umlos run` without --nproc N (the launcher's own).
std::vector<std::string> without_nproc(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc") {
      ++i;
      continue;
    }
    if (args[i].rfind("--nproc=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

// A rank other than 0: rank 0 writes the job's run folder; this one runs
// the same procedure in a private folder of its own (removed when it
// succeeds), restoring rank 0's checkpoint when the job resumes.
int run_other_rank(const std::string& manifest, RunOptions options) {
  options.quiet = true;
  if (options.resume) {
    if (!options.resume_from.empty()) {
      options.replica_from = options.resume_from;
    } else if (std::filesystem::exists(std::filesystem::path(options.run_dir) / "checkpoints" / "latest")) {
      options.replica_from = latest_checkpoint(options.run_dir);
    }
    options.resume = false;
    options.resume_from.clear();
  }
  options.run_dir = private_rank_folder(options.world.rank);
  const int status = run_manifest(manifest, options);
  if (status == 0) {
    std::error_code ec;
    std::filesystem::remove_all(options.run_dir, ec);
  } else {
    std::fprintf(stderr, "umlos: rank %d's records: %s\n", options.world.rank, options.run_dir.c_str());
  }
  return status;
}

int cmd_run(const std::vector<std::string>& args) {
  po::options_description desc("umlos run options");
  std::string manifest, resume_dir, rendezvous;
  RunOptions options;
  int nproc = 0;
  int32_t rank = -1, world_size = 0;
  double comm_timeout_s = 30;
  desc.add_options()("manifest", po::value<std::string>(&manifest), "the manifest (YAML)")(
      "run-dir", po::value<std::string>(&options.run_dir),
      "write trace.jsonl / failure.json here instead of the job's namespace folder under UML_OS_ROOT")(
      "quiet,q", po::bool_switch(&options.quiet), "no progress lines")(
      "strict-contracts", po::bool_switch(&options.strict_contracts),
      "digest the inputs of PURE operators around every call, not only the first")(
      "profile", po::bool_switch(&options.profile),
      "print the time per operator (kernel checks, module, driver); write RUN_DIR/profile.json")(
      "sync-fingerprints", po::bool_switch(&options.sync_fingerprints),
      "hash each step's state fingerprint before the next step starts, not on a second thread while it runs "
      "(same digests, same trace)")(
      "paired-fingerprints", po::bool_switch(&options.paired_fingerprints),
      "hash the state fingerprints of two steps at once on the run's own thread, not each on a second thread "
      "(same digests, same trace; the default for a process that may use one CPU and for the ranks of a job that "
      "leave no core free, LOCAL_WORLD_SIZE >= cores)")(
      "checkpoint-every", po::value<int64_t>(&options.checkpoint_every),
      "write RUN_DIR/checkpoints/ckpt_<t>.pb after every N-th iteration (default: config.checkpoint_every, "
      "else none; docs/checkpoint.md)")(
      "resume", po::value<std::string>(&resume_dir),
      "RUN_DIR: continue that run from its latest checkpoint, with the manifest it was started from")(
      "resume-from", po::value<std::string>(&options.resume_from), "with --resume: this checkpoint file")(
      "nproc", po::value<int>(&nproc),
      "start N local ranks of this job and wait for them; when one fails the others stop (docs/distributed.md)")(
      "rank", po::value<int32_t>(&rank), "this process's rank (default: $RANK, else 0)")(
      "world-size", po::value<int32_t>(&world_size), "ranks in the job (default: $WORLD_SIZE, else 1)")(
      "rendezvous", po::value<std::string>(&rendezvous),
      "where the ranks meet: tcp://HOST:PORT (rank 0 listens there) or file:/DIR, fresh for the job (default: "
      "$UMLOS_RENDEZVOUS, else tcp://$MASTER_ADDR:$MASTER_PORT)")(
      "comm-timeout", po::value<double>(&comm_timeout_s),
      "seconds a collective may wait for the other ranks before the job fails with COLLECTIVE_FAILURE (default 30)");
  po::positional_options_description pos;
  pos.add("manifest", 1);
  po::variables_map vm;
  if (!parse(args, desc, pos, vm,
             "umlos run MANIFEST [--run-dir DIR] [--checkpoint-every N] [--quiet] [--nproc N]\n"
             "       umlos run --resume RUN_DIR [--resume-from CHECKPOINT]"))
    return 0;
  if (vm.count("checkpoint-every") && options.checkpoint_every < 0)
    throw Failure(UMLOS_INVALID_ARGUMENT,
                  "option --checkpoint-every: expected 0 (none) or a positive number of "
                  "iterations, found " +
                      std::to_string(options.checkpoint_every));
  if (!vm.count("checkpoint-every")) options.checkpoint_every = -1;  // the manifest decides
  if (options.sync_fingerprints && options.paired_fingerprints)
    throw po::error("--sync-fingerprints hashes each step at once and --paired-fingerprints two at a time: give one");
  if (!(comm_timeout_s > 0 && comm_timeout_s <= 86400))
    throw po::error("--comm-timeout: expected seconds in (0, 86400], found " + std::to_string(comm_timeout_s));
  if (vm.count("nproc")) {
    if (nproc < 1 || nproc > 1024) throw po::error("--nproc: expected 1..1024 ranks, found " + std::to_string(nproc));
    if (vm.count("rank") || vm.count("world-size") || vm.count("rendezvous"))
      throw po::error("--nproc starts the ranks itself: leave out --rank, --world-size and --rendezvous");
    return launch_local(nproc, without_nproc(args), 10000);
  }
  options.world = resolve_world(rank, world_size, rendezvous, static_cast<int64_t>(comm_timeout_s * 1000));
  if (!resume_dir.empty()) {
    options.resume = true;
    if (!options.run_dir.empty() && options.run_dir != resume_dir)
      throw po::error("--resume RUN_DIR and --run-dir name different folders");
    options.run_dir = resume_dir;
    if (manifest.empty()) {
      // The manifest the run was started from (module and data paths are
      // relative to it); the checkpoint's canonical bytes must match it.
      // Read through the capped reader: a FIFO or a device there is refused
      // instead of blocking or filling memory.
      const std::string path_file = (std::filesystem::path(resume_dir) / "manifest.path").string();
      std::error_code ec;
      if (std::filesystem::exists(std::filesystem::symlink_status(path_file, ec))) {
        const std::string text = read_text_file(path_file, kManifestPathReadLimit);
        manifest = text.substr(0, text.find('\n'));
      }
      if (manifest.empty()) {
        std::fprintf(stderr,
                     "umlos: NOT_FOUND: %s/manifest.path is missing or empty: is '%s' a run folder? "
                     "(give the manifest as well: umlos run MANIFEST --resume RUN_DIR)\n",
                     resume_dir.c_str(), resume_dir.c_str());
        return exit_code_for(UMLOS_NOT_FOUND);
      }
    }
  }
  if (manifest.empty()) throw po::error("the option '--manifest' is required but missing");
  if (options.world.rank == 0) return run_manifest(manifest, options);
  return run_other_rank(manifest, options);
}

int cmd_hash(const std::vector<std::string>& args) {
  po::options_description desc("umlos hash options");
  std::string file;
  desc.add_options()("file", po::value<std::string>(&file)->required(), "module file");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse(args, desc, pos, vm, "umlos hash FILE")) return 0;
  Digest d = hash_module_file(file);
  std::printf("%s  %s\n\n# manifest entry that pins it:\n  - path: %s\n    sha256: %s\n", to_hex(d).c_str(),
              file.c_str(), file.c_str(), to_hex(d).c_str());
  return 0;
}

int cmd_manifest(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf(
        "usage: umlos manifest hash MANIFEST\n"
        "       umlos manifest canonical MANIFEST [-o FILE] [--diag]\n"
        "       umlos manifest pin MANIFEST -o OUT\n");
    return args.empty() ? kUsageExit : 0;
  }
  std::string sub = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  po::options_description desc("umlos manifest " + sub + " options");
  std::string manifest, out;
  bool diag = false;
  desc.add_options()("manifest", po::value<std::string>(&manifest)->required(), "the manifest (YAML)");
  if (sub == "canonical" || sub == "pin") {
    auto* value = po::value<std::string>(&out);
    if (sub == "pin") value->required();
    desc.add_options()("output,o", value,
                       sub == "pin" ? "pinned copy to write" : "write the bytes to FILE instead of stdout");
  }
  if (sub == "canonical") desc.add_options()("diag", po::bool_switch(&diag), "print RFC 8949 diagnostic notation");
  po::positional_options_description pos;
  pos.add("manifest", 1);
  po::variables_map vm;
  if (sub == "hash") {
    if (!parse(rest, desc, pos, vm, "umlos manifest hash MANIFEST")) return 0;
    Manifest m = load_manifest(manifest);
    std::printf(
        "manifest_hash      %s\npolicy_hash        %s\nenv_manifest_hash  %s\nreplay_token       %s\n"
        "job_id             %s\nspec_version       %s\nseed               %llu\n",
        to_hex(m.manifest_hash).c_str(), to_hex(m.policy_hash).c_str(), to_hex(m.env_manifest_hash).c_str(),
        to_hex(m.replay_token).c_str(), job_id(m).c_str(), m.spec_version.c_str(),
        static_cast<unsigned long long>(m.seed));
    return 0;
  }
  if (sub == "canonical") {
    if (!parse(rest, desc, pos, vm, "umlos manifest canonical MANIFEST [-o FILE] [--diag]")) return 0;
    Manifest m = load_manifest(manifest);
    if (diag) {
      std::string text = cbor::diagnostic(m.canonical) + "\n";
      if (out.empty())
        std::fwrite(text.data(), 1, text.size(), stdout);
      else
        write_file_atomic(out, text);
    } else if (out.empty()) {
      std::fwrite(m.canonical_bytes.data(), 1, m.canonical_bytes.size(), stdout);
    } else {
      write_file_atomic(out, m.canonical_bytes);
      std::fprintf(stderr, "wrote %zu bytes (SHA-256 %s = manifest_hash) to %s\n", m.canonical_bytes.size(),
                   to_hex(m.manifest_hash).c_str(), out.c_str());
    }
    return 0;
  }
  if (sub == "pin") {
    if (!parse(rest, desc, pos, vm, "umlos manifest pin MANIFEST -o OUT")) return 0;
    pin_manifest(manifest, out);
    return 0;
  }
  std::fprintf(stderr, "umlos manifest: unknown subcommand '%s' (hash, canonical, pin)\n", sub.c_str());
  return kUsageExit;
}

int cmd_modules(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "inspect") {
    std::printf("usage: umlos modules inspect FILE [--json]\n");
    return (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) ? 0 : kUsageExit;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  po::options_description desc("umlos modules inspect options");
  std::string file;
  bool json = false;
  desc.add_options()("file", po::value<std::string>(&file)->required(), "module file")("json", po::bool_switch(&json),
                                                                                       "machine-readable output");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse(rest, desc, pos, vm, "umlos modules inspect FILE [--json]")) return 0;
  return inspect_module(file, json);
}

int cmd_conformance(const std::vector<std::string>& args) {
  po::options_description desc("umlos conformance options");
  ConformanceOptions opt;
  opt.driver_module = default_module_path("libumlos_cpu_driver.so");
  desc.add_options()("modules", po::value<std::vector<std::string>>(&opt.modules)->required(), "module files")(
      "driver-module", po::value<std::string>(&opt.driver_module),
      "reference driver module (default: libumlos_cpu_driver.so in modules/ beside umlos, or in "
      "../lib/umlos/modules/)")("driver", po::value<std::string>(&opt.driver_name), "driver name (default cpu_driver)")(
      "allow-missing-vectors", po::bool_switch(&opt.allow_missing_vectors),
      "report operators without test vectors as SKIP instead of FAIL")("json", po::bool_switch(&opt.json),
                                                                       "machine-readable report")(
      "case-timeout", po::value<double>(&opt.case_timeout_s),
      "seconds one test-vector case may run before it is stopped and fails with QUOTA_EXCEEDED (default 60; 0: none)");
  po::positional_options_description pos;
  pos.add("modules", -1);
  po::variables_map vm;
  if (!parse(args, desc, pos, vm, "umlos conformance FILE... [--driver-module PATH] [--json] [--case-timeout S]"))
    return 0;
  if (!(opt.case_timeout_s >= 0) || opt.case_timeout_s > 1e6) {
    throw Failure(UMLOS_INVALID_ARGUMENT, "--case-timeout " + std::to_string(opt.case_timeout_s) +
                                              ": expected seconds between 0 (no limit) and 1e6");
  }
  return run_conformance(opt);
}

int cmd_exec(const std::vector<std::string>& args) {
  po::options_description desc("umlos exec options");
  ExecOptions o;
  o.driver_module = default_module_path("libumlos_cpu_driver.so");
  o.executor_module = default_module_path("libumlos_executor.so");
  desc.add_options()("ir", po::value<std::string>(&o.ir_file)->required(), "ModelIR graph (YAML or JSON)")(
      "mode", po::value<std::string>(&o.mode), "forward (default), backward or inference")(
      "seed", po::value<uint64_t>(&o.seed), "seed of the init-stream draws for inputs and parameters (0)")(
      "threads", po::value<int64_t>(&o.threads), "driver threads, and threads hashing execution_fp (1)")(
      "driver-module", po::value<std::string>(&o.driver_module), "driver module (default: shipped cpu_driver)")(
      "driver", po::value<std::string>(&o.driver_name), "driver name (cpu_driver)")(
      "executor-module", po::value<std::string>(&o.executor_module), "executor module (default: shipped)")(
      "tmmu-module", po::value<std::string>(&o.tmmu_module),
      "TMMU strategy module placing activations (default: shipped libumlos_tmmu.so beside the executor)")(
      "inputs", po::value<std::string>(&o.inputs_file),
      "JSON of named tensors replacing the init draws: {\"x\": {\"dtype\", \"shape\", \"values\"}} (docs/modelir.md)")(
      "module", po::value<std::vector<std::string>>(&o.modules),
      "a further module to load (repeatable): primitives it provides (ABI 1.6) run on any driver")(
      "json", po::bool_switch(&o.json), "print outputs and gradients as JSON");
  po::positional_options_description pos;
  pos.add("ir", 1);
  po::variables_map vm;
  if (!parse(args, desc, pos, vm,
             "umlos exec IR [--mode forward|backward|inference] [--inputs FILE] [--seed S] [--json]"))
    return 0;
  return json_edge(o.inputs_file.empty() ? o.ir_file : o.inputs_file, [&] { return run_exec(o); });
}

std::vector<uint32_t> parse_words(const std::string& text, size_t count, const char* what) {
  std::vector<uint32_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::string h = item;
    if (h.rfind("0x", 0) == 0 || h.rfind("0X", 0) == 0) h = h.substr(2);
    if (h.empty() || h.size() > 8 || h.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      throw po::error(std::string("--") + what + ": '" + item + "' is not a 32-bit hex word");
    }
    out.push_back(static_cast<uint32_t>(std::stoul(h, nullptr, 16)));
  }
  if (out.size() != count) {
    throw po::error(std::string("--") + what + ": expected " + std::to_string(count) + " comma-separated words, got " +
                    std::to_string(out.size()));
  }
  return out;
}

int cmd_rng(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "philox") {
    std::printf("usage: umlos rng philox --key K0,K1 --counter C0,C1,C2,C3 [--rounds R]\n");
    return (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) ? 0 : kUsageExit;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  po::options_description desc("umlos rng philox options");
  std::string key, counter;
  unsigned rounds = 10;
  desc.add_options()("key", po::value<std::string>(&key)->required(), "two 32-bit hex words K0,K1")(
      "counter", po::value<std::string>(&counter)->required(), "four 32-bit hex words C0,C1,C2,C3")(
      "rounds", po::value<unsigned>(&rounds), "rounds (default 10: Philox4x32-10)");
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse(rest, desc, pos, vm, "umlos rng philox --key K0,K1 --counter C0,C1,C2,C3 [--rounds R]")) return 0;
  if (rounds == 0 || rounds > 16) throw po::error("--rounds must be between 1 and 16");
  std::vector<uint32_t> k = parse_words(key, 2, "key"), c = parse_words(counter, 4, "counter");
  uint32_t out[4];
  umlos_philox4x32(c.data(), k.data(), rounds, out);
  std::printf("%08x %08x %08x %08x\n", out[0], out[1], out[2], out[3]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kTopHelp, stdout);
    return args.empty() ? kUsageExit : 0;
  }
  if (args[0] == "--version") {
    std::printf("umlos %s (ABI %d.%d)\n", UMLOS_VERSION_STRING, UMLOS_ABI_MAJOR, UMLOS_ABI_MINOR);
    return 0;
  }
  std::string command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (command == "run") return cmd_run(rest);
    if (command == "hash") return cmd_hash(rest);
    if (command == "manifest") return cmd_manifest(rest);
    if (command == "modules") return cmd_modules(rest);
    if (command == "conformance") return cmd_conformance(rest);
    if (command == "rng") return cmd_rng(rest);
    if (command == "exec") return cmd_exec(rest);
    if (command == "replay") return json_edge(input_of(rest), [&] { return umlos::cmd_replay(rest); });
    if (command == "report") return json_edge(input_of(rest), [&] { return umlos::cmd_report(rest); });
    if (command == "export") return json_edge(input_of(rest), [&] { return umlos::cmd_export(rest); });
    if (command == "dataset") return umlos::cmd_dataset(rest);
#ifdef UMLOS_HAVE_PLAN
    if (command == "plan") return umlos::cmd_plan(rest);
#endif
    std::fprintf(stderr, "umlos: unknown command '%s'\n\n%s", command.c_str(), kTopHelp);
    return kUsageExit;
  } catch (const po::error& e) {
    std::fprintf(stderr, "umlos %s: %s (see umlos %s --help)\n", command.c_str(), e.what(), command.c_str());
    return kUsageExit;
  } catch (const Failure& f) {
    std::fprintf(stderr, "umlos: %s: %s\n", status_name(f.code()), f.what());
    return exit_code_for(f.code());
  } catch (const nlohmann::json::exception& e) {
    // Any other command's JSON input (json_edge names the file where it can).
    std::fprintf(stderr, "umlos: INVALID_ARGUMENT: malformed or mistyped JSON input: %s\n", e.what());
    return exit_code_for(UMLOS_INVALID_ARGUMENT);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "umlos: internal error: %s\n", e.what());
    return exit_code_for(UMLOS_INTERNAL);
  }
}
