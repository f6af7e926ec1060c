// `pinbench compare BASE CURRENT`: judge every metric of two results and gate CI on the verdicts.
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "gate/compare.hpp"
#include "gate/output.hpp"
#include "result/result_io.hpp"

namespace pinbench::app {

namespace {

struct compare_args {
  std::string base, current;
  std::vector<std::string> more_base;  ///< --baseline: further baseline results
  std::string threshold = "5%";
  std::string fail_on = "regression";
  bool strict = false;
  bool allow_env_mismatch = false;
  bool allow_empty = false;
  std::string format = "table";
  std::string out, junit, md, html;
  std::uint64_t seed = 1;
  double confidence = 0.95;
  std::size_t resamples = 2000;
  double noise_multiple = 2;
  std::vector<std::string> metrics;
};

gate::options read_options(const compare_args& a) {
  gate::options o;
  const auto t = parse_fraction(a.threshold);
  if (!t)
    throw input_error(
        {}, "--threshold",
        "expected a fraction such as 0.05 or a percentage such as 5%, got \"" + a.threshold + "\"");
  o.threshold = *t;
  o.fail = *gate::parse_fail_on(a.fail_on);  // CLI11 checked the value
  if (a.strict) {
    if (o.fail == gate::fail_on::never)
      throw input_error({}, "--strict", "contradicts --fail-on never");
    o.fail = gate::fail_on::inconclusive;
  }
  o.allow_env_mismatch = a.allow_env_mismatch;
  o.allow_empty = a.allow_empty;
  o.seed = a.seed;
  o.confidence = a.confidence;
  o.resamples = a.resamples;
  o.noise_multiple = a.noise_multiple;
  o.metrics = a.metrics;
  return o;
}

std::string render(const gate::comparison& c, const std::string& format) {
  if (format == "json") return gate::to_json(c).dump(2) + "\n";
  if (format == "md") return gate::to_markdown(c);
  return gate::to_table(c, ::isatty(STDOUT_FILENO) != 0);
}

// The result files a path stands for: itself, or a folder's *.json files in name order ("ec"
// says why a folder could not be read).
std::vector<std::string> listed_results(const std::string& path, std::error_code& ec) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path, ec)) {
    ec.clear();  // a file, or nothing there: said when it is read
    return {path};
  }
  std::vector<std::string> files;
  for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() == ".json")
      files.push_back(it->path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The same, refusing a folder that cannot be read or holds no result.
std::vector<std::string> result_files(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files = listed_results(path, ec);
  if (ec) throw environment_error("cannot read the folder " + path + ": " + ec.message());
  if (files.empty())
    throw environment_error("missing baseline: the folder " + path +
                            " holds no result (*.json written by `pinbench run --out`)");
  return files;
}

// One side of the comparison: every file read and checked against the first (same backend and
// device), then merged, each file's rounds kept apart.
result::run_result read_side(const std::vector<std::string>& paths, const gate::options& opts,
                             std::string& label, std::size_t* run_count = nullptr) {
  std::vector<result::run_result> runs;
  std::vector<std::string> files;
  for (const auto& p : paths)
    for (auto& f : result_files(p)) files.push_back(std::move(f));
  for (const auto& f : files) {
    runs.push_back(result::read_result_file(f));
    if (runs.size() == 1 || opts.allow_env_mismatch) continue;
    const std::string why = gate::environment_mismatch(runs.front(), runs.back());
    if (!why.empty())
      throw gate::incomparable_error("incomparable results: " + files.front() + " and " + f +
                                     " (one side of the comparison) differ: " + why);
  }
  if (run_count != nullptr) *run_count = files.size();
  if (files.size() > 1)
    label = fmt::format("{} ({} results)",
                        paths.size() == 1 ? paths.front() : files.front() + ", ...", files.size());
  return result::merge_runs(std::move(runs));
}

int compare(const compare_args& a) {
  const gate::options opts = read_options(a);
  if (a.out == "-" && a.html == "-")
    throw input_error({}, "--html", "--out and --html cannot both write to stdout ('-')");
  // Every file read, a folder's results included: no output may replace one.
  std::vector<named_file> inputs;
  const auto add_inputs = [&inputs](const std::string& path, const char* role) {
    std::error_code ec;  // a folder that cannot be read is reported when it is read
    for (auto& f : listed_results(path, ec)) inputs.push_back({role, std::move(f)});
  };
  add_inputs(a.base, "the baseline");
  for (const auto& b : a.more_base) add_inputs(b, "the baseline");
  add_inputs(a.current, "the current result");
  check_distinct_files(
      inputs, {{"--out", a.out}, {"--md", a.md}, {"--junit", a.junit}, {"--html", a.html}});
  for (const auto* path : {&a.out, &a.md, &a.junit, &a.html})
    if (!path->empty()) check_writable(*path);

  // Without a baseline there is nothing to gate on: that is the environment, not the input.
  std::error_code ec;
  std::vector<std::string> base_paths{a.base};
  base_paths.insert(base_paths.end(), a.more_base.begin(), a.more_base.end());
  for (const auto& p : base_paths)
    if (!std::filesystem::exists(p, ec))
      throw environment_error("missing baseline: " + p +
                              " does not exist (create one with `pinbench run --out " + p + "`)");
  std::string base_label = a.base, current_label = a.current;
  std::size_t base_runs = 0;
  const auto base = read_side(base_paths, opts, base_label, &base_runs);
  const auto current = read_side({a.current}, opts, current_label);
  gate::comparison c = gate::compare(base, current, opts, base_label, current_label);
  // Measured here: one baseline run gave 1 false alarm in 10 A/A comparisons (a process whose
  // memory layout made the raw allocator 60% slower in all three of its rounds), three gave 0.
  if (base_runs == 1)
    c.warnings.push_back(
        "the baseline is one run: what differs from run to run (a process's memory layout, a "
        "busy minute on a shared machine) cannot be told from a change; a history (a folder of "
        "the last runs, or --baseline more) sees it");

  if (!a.out.empty()) write_file_atomic(a.out, gate::to_json(c).dump(2) + "\n");
  if (!a.md.empty()) write_file_atomic(a.md, gate::to_markdown(c));
  if (!a.junit.empty()) write_file_atomic(a.junit, gate::to_junit(c));
  if (!a.html.empty()) write_file_atomic(a.html, gate::to_html(c, base, current));
  // With --out - (or --html -) the JSON (the page) went to stdout and replaces the table.
  const bool stdout_taken = a.out == "-" || a.html == "-";
  if (!stdout_taken) {
    const std::string text = render(c, a.format);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  if (a.format != "table" || stdout_taken)
    std::fprintf(stderr, "pinbench: %s\n", c.outcome_line().c_str());
  return c.exit_code();
}

}  // namespace

runner add_compare(CLI::App& app) {
  auto a = std::make_shared<compare_args>();
  auto* sub = app.add_subcommand(
      "compare",
      "Compare two results (pinbench run --out): per metric the ratio of medians, a bootstrap "
      "interval and a Mann-Whitney test; exit 1 on a gated regression, 3 when incomparable");
  sub->add_option("base", a->base,
                  "The baseline result (pinbench.result/1 JSON), or a folder of them (the last "
                  "runs of main: their rounds give the run-to-run noise)")
      ->required()
      ->type_name("BASE.json");
  sub->add_option("current", a->current,
                  "The result to judge against it, or a folder of them (one per round)")
      ->required()
      ->type_name("CURRENT.json");
  sub->add_option("--baseline", a->more_base,
                  "Another baseline result or folder, merged with BASE (repeatable)")
      ->allow_extra_args(false)  // one file per --baseline: the positionals stay positional
      ->type_name("FILE");
  sub->add_option("--threshold", a->threshold,
                  "Smallest change of a median that counts: 5% or 0.05 (a scenario's gate and "
                  "the baseline's noise can raise it)")
      ->type_name("PCT")
      ->capture_default_str();
  sub->add_option("--fail-on", a->fail_on,
                  "regression: exit 1 on a gated regression; inconclusive: also exit 3 on "
                  "inconclusive gated metrics; never: report only")
      ->check(CLI::IsMember({"regression", "inconclusive", "never"}))
      ->capture_default_str();
  sub->add_flag("--strict", a->strict, "Same as --fail-on inconclusive");
  sub->add_flag("--allow-env-mismatch", a->allow_env_mismatch,
                "Compare results from different backends or devices (with a warning)");
  sub->add_flag("--allow-empty", a->allow_empty,
                "Pass when nothing gated was compared (no case or gated metric in common); "
                "by default that exits 3, so that a renamed scenario cannot slip through a gate");
  sub->add_option("--format", a->format, "What stdout shows: table, json, md")
      ->check(CLI::IsMember({"table", "json", "md"}))
      ->capture_default_str();
  sub->add_option("--out", a->out, "Write the comparison as JSON here ('-' = stdout)")
      ->type_name("FILE");
  sub->add_option("--md", a->md, "Also write the Markdown summary here")->type_name("FILE");
  sub->add_option("--junit", a->junit, "Also write JUnit XML here (one test per gated metric)")
      ->type_name("FILE");
  sub->add_option("--html", a->html,
                  "Also write a self-contained HTML page here: the verdicts, regressions first, "
                  "and per gated metric both sides' samples and the interval of the change "
                  "against the threshold ('-' = stdout)")
      ->type_name("FILE");
  sub->add_option("--metric", a->metrics, "Compare only this metric (repeatable)")
      ->type_name("NAME");
  sub->add_option("--seed", a->seed, "Seed of the bootstrap (same seed, same intervals)")
      ->capture_default_str();
  sub->add_option("--confidence", a->confidence,
                  "Confidence of the interval; the test's level is 1 - confidence")
      ->check(CLI::Range(0.5, 0.999))
      ->capture_default_str();
  sub->add_option("--resamples", a->resamples, "Bootstrap resamples")
      ->check(CLI::Range(100, 1000000))
      ->capture_default_str();
  sub->add_option("--noise-multiple", a->noise_multiple,
                  "Raise a metric's threshold to this many times the baseline's relative noise "
                  "(1.4826 MAD / median); 0 = off")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  return [a] { return compare(*a); };
}

}  // namespace pinbench::app
