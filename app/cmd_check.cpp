// `pinbench check RESULT --reference REFS`: every referenced figure of a result against absolute
// references per system (gate/reference.hpp); `check --init RESULT` writes REFS from a
// known-good result.
#include <unistd.h>
#include <cstdio>
#include <initializer_list>
#include <utility>

#include <fmt/format.h>

#include "commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "gate/reference.hpp"
#include "report/report.hpp"
#include "result/result_io.hpp"

namespace pinbench::app {

namespace {

struct check_args {
  std::string result, reference;
  bool init = false;
  double widen = 2;
  std::string floor = "10%";
  bool one_sided = false;
  std::string host, name;
  std::string format = "table";
  std::string out, md, junit;
  bool strict = false;
};

int init_references(const check_args& a) {
  for (const auto& [flag, set] :
       std::initializer_list<std::pair<const char*, bool>>{{"--reference", !a.reference.empty()},
                                                           {"--md", !a.md.empty()},
                                                           {"--junit", !a.junit.empty()},
                                                           {"--strict", a.strict}})
    if (set)
      throw input_error({}, flag, "not with --init: --init writes references, it checks nothing");
  const auto floor = parse_fraction(a.floor);
  if (!floor || *floor < 0 || *floor > 1)
    throw input_error({}, "--floor",
                      "expected a fraction in [0, 1] such as 0.05 or 5%, got \"" + a.floor + "\"");
  const std::string out = a.out.empty() ? "-" : a.out;
  check_distinct_files({{"the result", a.result}}, {{"--out", out}});
  check_writable(out);
  const result::run_result r = result::read_result_file(a.result);
  gate::init_options opts;
  opts.widen = a.widen;
  opts.floor = *floor;
  opts.one_sided = a.one_sided;
  opts.host = a.host;
  opts.name = a.name;
  opts.source = a.result;
  std::size_t left_out = 0;
  const auto doc = gate::init_references(r, opts, report::headline_metrics, left_out);
  const auto& refs = doc["systems"][0]["references"];
  if (refs.empty())
    throw input_error(a.result, {},
                      "nothing to reference: no completed case has a headline metric with a "
                      "direction and a finite sample");
  write_file_atomic(out, doc.dump(2) + "\n");
  std::string line = fmt::format("pinbench: {} reference(s) for {}", refs.size(),
                                 doc["systems"][0]["name"].get<std::string>());
  if (out != "-") line += " written to " + out;
  if (left_out > 0)
    line += fmt::format(" ({} figure(s) at 0 left out: a fraction of 0 bounds nothing)", left_out);
  std::fprintf(stderr, "%s\n", line.c_str());
  return exit_ok;
}

int check(const check_args& a) {
  if (a.init) return init_references(a);
  if (a.reference.empty())
    throw input_error({}, "--reference",
                      "expected a REFS file (pinbench.references/1), or --init to write one");
  for (const auto& [flag, set] :
       std::initializer_list<std::pair<const char*, bool>>{{"--widen", a.widen != 2},
                                                           {"--floor", a.floor != "10%"},
                                                           {"--one-sided", a.one_sided},
                                                           {"--host", !a.host.empty()},
                                                           {"--name", !a.name.empty()}})
    if (set) throw input_error({}, flag, "only with --init: it shapes the references written");
  if (a.out == "-" && a.format != "table")
    throw input_error({}, "--out", "--out - and --format both write to stdout: choose one");
  check_distinct_files({{"the result", a.result}, {"--reference", a.reference}},
                       {{"--out", a.out}, {"--md", a.md}, {"--junit", a.junit}});
  for (const auto* path : {&a.out, &a.md, &a.junit})
    if (!path->empty()) check_writable(*path);

  const gate::reference_file refs = gate::read_references(a.reference);
  const result::run_result r = result::read_result_file(a.result);
  const gate::reference_report rep =
      gate::check_references(r, a.result, refs, gate::check_options{a.strict});

  if (!a.out.empty()) write_file_atomic(a.out, gate::to_json(rep).dump(2) + "\n");
  if (!a.md.empty()) write_file_atomic(a.md, gate::to_markdown(rep));
  if (!a.junit.empty()) write_file_atomic(a.junit, gate::to_junit(rep));
  if (a.out != "-") {
    std::string text;
    if (a.format == "json")
      text = gate::to_json(rep).dump(2) + "\n";
    else if (a.format == "md")
      text = gate::to_markdown(rep);
    else
      text = gate::to_table(rep, ::isatty(STDOUT_FILENO) != 0);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  if (a.format != "table" || a.out == "-")
    std::fprintf(stderr, "pinbench: %s\n", rep.outcome_line().c_str());
  return rep.exit_code();
}

}  // namespace

runner add_check(CLI::App& app) {
  auto a = std::make_shared<check_args>();
  auto* sub = app.add_subcommand(
      "check",
      "Judge a result against absolute references per system (device, backend, host): exit 0 "
      "all inside, 1 one outside, 3 no reference applies; --init writes references from a "
      "known-good result");
  sub->add_option("result", a->result, "A pinbench.result/1 file (from run --out)")
      ->required()
      ->type_name("RESULT.json");
  sub->add_option("--reference", a->reference,
                  "The references (pinbench.references/1): systems, each a selector and "
                  "{scenario, case, metric, value, lower, upper, unit} figures")
      ->type_name("REFS.json");
  sub->add_flag("--init", a->init,
                "Write references from RESULT instead (stdout, or --out): its device and "
                "backend, each headline metric at its median");
  sub->add_option("--widen", a->widen,
                  "--init: bounds at this many times the observed spread on each side (median "
                  "to quartile, or to the farthest round median)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  sub->add_option("--floor", a->floor, "--init: bounds at least this far from the value")
      ->type_name("PCT")
      ->capture_default_str();
  sub->add_flag("--one-sided", a->one_sided,
                "--init: bound the worse side only (lower for higher-is-better metrics)");
  sub->add_option("--host", a->host,
                  "--init: also select on this host name pattern (default: any host)")
      ->type_name("PATTERN");
  sub->add_option("--name", a->name, "--init: the system's name (default: device (backend))");
  sub->add_option("--format", a->format, "What stdout shows: table, json, md")
      ->check(CLI::IsMember({"table", "json", "md"}))
      ->capture_default_str();
  sub->add_option("--out", a->out,
                  "Write the check as JSON here ('-' = stdout); with --init, the references")
      ->type_name("FILE");
  sub->add_option("--md", a->md, "Also write the Markdown summary here")->type_name("FILE");
  sub->add_option("--junit", a->junit, "Also write JUnit XML here (one test per figure)")
      ->type_name("FILE");
  sub->add_flag("--strict", a->strict,
                "Exit 3 when a referenced figure is missing from a scenario that ran");
  return [a] { return check(*a); };
}

}  // namespace pinbench::app
