#include "chart/html.hpp"

#include <fmt/format.h>

#include "chart/svg.hpp"

namespace pinbench::chart::html {

namespace {

// Type, headings, tables and figures: the same on every page.
constexpr std::string_view shared_style_sheet = R"(
body { font-family: system-ui, sans-serif; color: #1b1b1b; background: #fff; margin: 0 auto;
       max-width: 1120px; padding: 0 20px 40px; line-height: 1.45; }
h1 { font-size: 1.6rem; margin: 24px 0 4px; }
h2 { font-size: 1.3rem; margin: 0 0 6px; }
h3 { font-size: 1.05rem; margin: 18px 0 6px; }
.lead { color: #444; margin: 0 0 12px; }
.warning { border-left: 4px solid #D55E00; background: #fff4ec; padding: 6px 10px; margin: 6px 0; }
section { border-top: 1px solid #ccc; padding-top: 18px; margin-top: 26px; }
table { border-collapse: collapse; font-size: 0.88rem; margin: 8px 0; }
.table-wrap { overflow-x: auto; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; vertical-align: top; }
thead th { background: #f0f0f0; }
tbody th { text-align: left; font-weight: normal; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
figure { margin: 14px 0 22px; }
figcaption { font-size: 0.9rem; color: #333; margin: 0 0 6px; }
figcaption strong { display: block; font-size: 1rem; color: #111; }
svg.chart { max-width: 100%; height: auto; display: block; }
code { font-size: 0.9em; }
)";

}  // namespace

std::string page_head(std::string_view title, std::string_view tool_version,
                      std::string_view style) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"pinbench {}\">\n<link rel=\"icon\" href=\"data:,\">\n"
      "<title>{}</title>\n<style>{}{}</style>\n</head>\n<body>\n",
      content_security_policy, svg::escape(tool_version), svg::escape(title), shared_style_sheet,
      style);
}

std::string figure_html(const figure& f) {
  return fmt::format("<figure>\n<figcaption><strong>{}</strong>{}</figcaption>\n{}</figure>\n",
                     svg::escape(f.title), svg::escape(f.caption), f.svg);
}

}  // namespace pinbench::chart::html
