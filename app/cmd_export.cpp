// `pinbench export`: a result file in a CI tracker's own format (report/export.hpp).
#include <cstdio>

#include "commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "report/export.hpp"
#include "result/result_io.hpp"

namespace pinbench::app {

namespace {

struct export_args {
  std::string input;
  std::string format;
  std::string out = "-";
  bool quiet = false;
};

int export_result(const export_args& a) {
  const bool two_files = a.format == "github-action-benchmark";
  if (two_files && a.out == "-")
    throw input_error({}, "--out",
                      "expected a PREFIX: github-action-benchmark takes two files, "
                      "PREFIX-bigger.json and PREFIX-smaller.json");
  const std::string bigger = a.out + "-bigger.json", smaller = a.out + "-smaller.json";
  // Every output is checked before anything is written: a bad path writes nothing.
  if (two_files) {
    check_distinct_files({{"the result", a.input}}, {{"--out", bigger}, {"--out", smaller}});
    check_writable(bigger);
    check_writable(smaller);
  } else {
    check_distinct_files({{"the result", a.input}}, {{"--out", a.out}});
    if (a.out != "-") check_writable(a.out);
  }
  const result::run_result r = result::read_result_file(a.input);
  if (a.format == "bmf") {
    write_file_atomic(a.out, report::to_bmf(r));
    if (a.out != "-" && !a.quiet)
      std::fprintf(stderr, "pinbench: bmf written to %s\n", a.out.c_str());
    return exit_ok;
  }
  if (a.format == "google-benchmark") {
    const auto doc = report::to_google_benchmark(r);
    write_file_atomic(a.out, doc.json);
    if (!a.quiet && (a.out != "-" || doc.left_out > 0)) {
      std::fprintf(stderr, "pinbench: google-benchmark written to %s",
                   a.out == "-" ? "stdout" : a.out.c_str());
      if (doc.left_out > 0)
        std::fprintf(stderr,
                     " (%zu metric(s) left out: they share no time metric's samples; bmf and "
                     "github-action-benchmark keep them)",
                     doc.left_out);
      std::fprintf(stderr, "\n");
    }
    return exit_ok;
  }
  const auto arrays = report::to_github_action_benchmark(r);
  write_file_atomic(bigger, arrays.bigger);
  write_file_atomic(smaller, arrays.smaller);
  if (!a.quiet) {
    std::fprintf(stderr, "pinbench: %s and %s written", bigger.c_str(), smaller.c_str());
    if (arrays.left_out > 0)
      std::fprintf(stderr, " (%zu metric(s) without a direction left out: counters that inform)",
                   arrays.left_out);
    std::fprintf(stderr, "\n");
  }
  return exit_ok;
}

}  // namespace

runner add_export(CLI::App& app) {
  auto a = std::make_shared<export_args>();
  auto* sub = app.add_subcommand(
      "export",
      "Write a result in a CI tracker's format: Bencher (bmf), github-action-benchmark, Google "
      "Benchmark's JSON (its compare.py reads two)");
  sub->add_option("result", a->input, "A pinbench.result/1 file (from run --out)")
      ->required()
      ->type_name("RESULT.json");
  sub->add_option("--format", a->format,
                  "bmf: Bencher Metric Format (bencher run --adapter json --file FILE); "
                  "github-action-benchmark: customBiggerIsBetter and customSmallerIsBetter "
                  "arrays; google-benchmark: Google Benchmark's JSON, one entry per sample "
                  "(compare.py benchmarks A B)")
      ->check(CLI::IsMember({"bmf", "github-action-benchmark", "google-benchmark"}))
      ->required();
  sub->add_option("--out", a->out,
                  "bmf, google-benchmark: the file ('-' = stdout, the default); "
                  "github-action-benchmark: a PREFIX "
                  "for PREFIX-bigger.json and PREFIX-smaller.json")
      ->type_name("FILE|PREFIX");
  sub->add_flag("--quiet,-q", a->quiet, "No log lines on stderr");
  return [a] { return export_result(*a); };
}

}  // namespace pinbench::app
