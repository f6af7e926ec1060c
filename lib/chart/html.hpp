// What every HTML page of pinbench shares (the report, the comparison page): a self-contained
// head whose Content-Security-Policy refuses script and anything from the network, and a
// figure laid out with its title and caption above its chart.
#pragma once

#include <string>
#include <string_view>

#include "chart/figure.hpp"

namespace pinbench::chart::html {

/// No script and nothing from the network: inline styles and data: images only.
inline constexpr std::string_view content_security_policy =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// From <!DOCTYPE html> to <body>: charset, the policy above, viewport, the generator (pinbench
/// and `tool_version`), an empty icon (no request for favicon.ico), `title`, and the shared
/// style sheet followed by the page's own `style`. `title` is escaped; `style` is written as it is.
[[nodiscard]] std::string page_head(std::string_view title, std::string_view tool_version,
                                    std::string_view style);

/// A <figure>: its title and caption first (a reader sees what a chart shows before the chart),
/// then the SVG.
[[nodiscard]] std::string figure_html(const figure& f);

}  // namespace pinbench::chart::html
