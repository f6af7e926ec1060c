// Where scenarios come from: files, directories of files, and the built-ins (`builtin:NAME`).
#include <fmt/format.h>
#include <algorithm>
#include <map>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_limits.hpp"
#include "core/text.hpp"
#include "scenario/builtin.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::scenario {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view builtin_prefix = "builtin:";

scenario parse_builtin(const builtin_file& b) {
  scenario s = parse_scenario(b.text, std::string(b.source));
  s.builtin = true;
  return s;
}

scenario load_builtin(const std::string& arg) {
  const std::string_view name = std::string_view(arg).substr(builtin_prefix.size());
  std::vector<std::string> names;
  for (const auto& b : builtin_files()) {
    if (b.name == name) return parse_builtin(b);
    names.emplace_back(b.name);
  }
  throw input_error(
      arg, {},
      "no built-in scenario of that name" + did_you_mean(name, names) + "; see pinbench list");
}

std::vector<scenario> load_quick_suite() {
  std::vector<scenario> out;
  for (const auto& b : builtin_files()) {
    scenario s = parse_builtin(b);
    if (std::find(s.tags.begin(), s.tags.end(), "quick") != s.tags.end())
      out.push_back(std::move(s));
  }
  if (out.empty())
    throw input_error(
        "no built-in scenario is tagged \"quick\"; name a scenario file or builtin:NAME");
  return out;
}

std::vector<scenario> load_directory(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json" && it->is_regular_file()) files.push_back(it->path());
  }
  if (ec) throw input_error(dir.string(), {}, "cannot read: " + ec.message());
  if (files.empty())
    throw input_error(dir.string(), {}, "no scenario files (*.json) in this directory");
  std::sort(files.begin(), files.end());
  std::vector<scenario> out;
  out.reserve(files.size());
  for (const auto& f : files) out.push_back(load_scenario_file(f));
  return out;
}

// Results and `--set` address scenarios by name, so a name may appear only once per run.
void check_unique_names(const std::vector<scenario>& all) {
  std::map<std::string_view, const scenario*> seen;
  for (const auto& s : all) {
    const auto [it, fresh] = seen.emplace(s.name, &s);
    if (!fresh)
      throw input_error(
          s.source, "name",
          fmt::format("scenario \"{}\" is also defined in {}", s.name, it->second->source));
  }
}

}  // namespace

scenario load_scenario_file(const std::filesystem::path& path) {
  return parse_scenario(read_file(path, max_scenario_file_bytes), path.string());
}

std::vector<scenario> load_inputs(const std::vector<std::string>& args) {
  std::vector<scenario> all;
  if (args.empty()) all = load_quick_suite();
  for (const auto& arg : args) {
    std::error_code ec;
    if (arg.starts_with(builtin_prefix)) {
      all.push_back(load_builtin(arg));
    } else if (fs::is_directory(arg, ec)) {
      for (auto& s : load_directory(arg)) all.push_back(std::move(s));
    } else {
      all.push_back(load_scenario_file(arg));
    }
  }
  check_unique_names(all);
  return all;
}

}  // namespace pinbench::scenario
