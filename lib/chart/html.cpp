#include "chart/html.hpp"

#include <fmt/format.h>

#include "chart/svg.hpp"

namespace pinbench::chart::html {

std::string page_head(std::string_view title, std::string_view tool_version,
                      std::string_view style) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"pinbench {}\">\n<link rel=\"icon\" href=\"data:,\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
      content_security_policy, svg::escape(tool_version), svg::escape(title), style);
}

std::string figure_html(const figure& f) {
  return fmt::format("<figure>\n<figcaption><strong>{}</strong>{}</figcaption>\n{}</figure>\n",
                     svg::escape(f.title), svg::escape(f.caption), f.svg);
}

}  // namespace pinbench::chart::html
