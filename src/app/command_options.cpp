// Command-line parsing shared by the subcommands (see command_options.h).
#include "app/command_options.h"

#include <iostream>

namespace po = boost::program_options;

namespace ts {

std::optional<po::variables_map> parse_command_options(const std::vector<std::string>& args,
                                                       const po::options_description& opts, const char* positional) {
  po::positional_options_description pos;
  if (positional != nullptr) pos.add(positional, 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return std::nullopt;
  }
  po::notify(vm);
  return vm;
}

std::vector<std::string> option_strings(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? vm[name].as<std::vector<std::string>>() : std::vector<std::string>{};
}

}  // namespace ts
