// `pinbench report`: a result file as an HTML page with charts, Markdown, long-format CSV or the
// terminal table.
#include <unistd.h>
#include <cstdio>

#include "commands.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "report/report.hpp"
#include "result/result_io.hpp"

namespace pinbench::app {

namespace {

struct report_args {
  std::string input;
  std::string html, md, csv;
  bool table = false;
  bool quiet = false;
};

int report(const report_args& a) {
  struct output {
    const char* option;
    const std::string& path;
    std::string (*render)(const result::run_result&);
  };
  const output outputs[] = {{"--html", a.html, report::to_html},
                            {"--md", a.md, report::to_markdown},
                            {"--csv", a.csv, report::to_csv}};

  // Every output is checked before anything is written: a bad path writes nothing.
  check_distinct_files({{"the result", a.input}},
                       {{"--html", a.html}, {"--md", a.md}, {"--csv", a.csv}});
  int to_stdout = a.table ? 1 : 0;
  for (const auto& o : outputs) {
    if (o.path.empty()) continue;
    if (o.path == "-") ++to_stdout;
    check_writable(o.path);
  }
  if (to_stdout > 1)
    throw input_error({}, "--html/--md/--csv/--table",
                      "only one output can go to stdout ('-' or --table)");
  const result::run_result result = result::read_result_file(a.input);

  bool wrote = false;
  for (const auto& o : outputs) {
    if (o.path.empty()) continue;
    write_file_atomic(o.path, o.render(result));
    wrote = true;
    if (o.path != "-" && !a.quiet)
      std::fprintf(stderr, "pinbench: %s report written to %s\n", o.option + 2, o.path.c_str());
  }
  if (a.table || !wrote) {
    const std::string text = report::to_table(result, ::isatty(STDOUT_FILENO) != 0);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  return exit_ok;
}

}  // namespace

runner add_report(CLI::App& app) {
  auto a = std::make_shared<report_args>();
  auto* sub = app.add_subcommand(
      "report", "Turn a result file into an HTML page with charts, Markdown, CSV or a table");
  sub->add_option("result", a->input, "A pinbench.result/1 file (from run --out)")
      ->required()
      ->type_name("RESULT.json");
  sub->add_option("--html", a->html,
                  "Write one self-contained HTML page (tables and SVG charts; no network, no "
                  "script) here ('-' = stdout)")
      ->type_name("FILE");
  sub->add_option("--md", a->md, "Write a Markdown report here ('-' = stdout)")->type_name("FILE");
  sub->add_option("--csv", a->csv,
                  "Write long-format CSV here (one row per case and metric, params as columns; "
                  "'-' = stdout)")
      ->type_name("FILE");
  sub->add_flag("--table", a->table,
                "Print the terminal table to stdout (the default when no file is asked for)");
  sub->add_flag("--quiet,-q", a->quiet, "No log lines on stderr");
  return [a] { return report(*a); };
}

}  // namespace pinbench::app
