// cli_parse.hpp — the option parsing every `umlos` subcommand shares: its
// options plus -h/--help, positional arguments, --help printing the
// subcommand's own help, then the required-option checks (po::notify).
#pragma once

#include <boost/program_options.hpp>
#include <functional>
#include <string>
#include <vector>

namespace umlos {

// False when --help was asked (print_help has run and the command is done).
inline bool parse_command_line(
    const std::vector<std::string>& args, boost::program_options::options_description& desc,
    const boost::program_options::positional_options_description& pos, boost::program_options::variables_map& vm,
    const std::function<void(const boost::program_options::options_description&)>& print_help) {
  namespace po = boost::program_options;
  desc.add_options()("help,h", "show this help");
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  if (vm.count("help")) {
    print_help(desc);
    return false;
  }
  po::notify(vm);
  return true;
}

}  // namespace umlos
