#include <catch2/catch.hpp>

#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

using namespace pinbench;

TEST_CASE("sizes parse with binary units", "[core][units]") {
  CHECK(parse_bytes("512") == 512u);
  CHECK(parse_bytes("4KiB") == 4096u);
  CHECK(parse_bytes("64MiB") == 64u << 20);
  CHECK(parse_bytes("2GiB") == 2ull << 30);
  CHECK(parse_bytes("1TiB") == 1ull << 40);
  CHECK(parse_bytes("1.5KiB") == 1536u);
  CHECK(parse_bytes("1MB") == 1000000u);
  CHECK(parse_bytes(" 8 MiB ") == 8u << 20);
  CHECK_FALSE(parse_bytes("-1").has_value());
  CHECK_FALSE(parse_bytes("abc").has_value());
  CHECK_FALSE(parse_bytes("4XiB").has_value());
  CHECK_FALSE(parse_bytes("1.5").has_value());
  CHECK_FALSE(parse_bytes("99999999999TiB").has_value());
  CHECK_FALSE(parse_bytes("").has_value());
}

TEST_CASE("durations parse to nanoseconds", "[core][units]") {
  CHECK(parse_duration_ns("500ns") == 500);
  CHECK(parse_duration_ns("10us") == 10'000);
  CHECK(parse_duration_ns("2.5ms") == 2'500'000);
  CHECK(parse_duration_ns("2s") == 2'000'000'000);
  CHECK(parse_duration_ns("0") == 0);
  CHECK_FALSE(parse_duration_ns("10").has_value());
  CHECK_FALSE(parse_duration_ns("-1ms").has_value());
  CHECK_FALSE(parse_duration_ns("1 fortnight").has_value());
}

TEST_CASE("sizes and durations format for people", "[core][units]") {
  CHECK(format_bytes(4096) == "4 KiB");
  CHECK(format_bytes(1000) == "1000 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes_compact(256u << 20) == "256MiB");
  CHECK(format_bytes_compact(1000) == "1000");
  CHECK(format_duration_ns(1500) == "1.50 us");
  CHECK(format_duration_ns(2'000'000) == "2.00 ms");
}

TEST_CASE("summary statistics", "[core][stats]") {
  const std::vector<double> v{4, 1, 3, 2, 5};
  const auto s = summarize(v);
  CHECK(s.n == 5);
  CHECK(s.median == 3);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.q1 == 2);
  CHECK(s.q3 == 4);
  CHECK(s.mean == 3);
  CHECK(s.stdev == Approx(1.5811388));
  CHECK(summarize(std::vector<double>{}).n == 0);
  CHECK(summarize(std::vector<double>{7}).rel_stdev() == 0);
}

TEST_CASE("closest match suggests plausible misspellings only", "[core][text]") {
  const std::vector<std::string> keys{"bytes", "memory", "mode", "direction"};
  CHECK(closest_match("byts", keys) == "bytes");
  CHECK(closest_match("memroy", keys) == "memory");
  CHECK(closest_match("zzzzzzzz", keys).empty());
  CHECK(did_you_mean("mdoe", keys) == " (did you mean \"mode\"?)");
}

TEST_CASE("a share is a percentage or a fraction up to 1", "[units]") {
  CHECK(parse_fraction("5%") == Approx(0.05));
  CHECK(parse_fraction("0.05") == Approx(0.05));
  CHECK(parse_fraction(" 12.5% ") == Approx(0.125));
  CHECK(parse_fraction("150%") == Approx(1.5));
  CHECK(parse_fraction("0") == Approx(0));
  CHECK_FALSE(parse_fraction("5"));  // 5% or 500%? refused
  CHECK_FALSE(parse_fraction("-1%"));
  CHECK_FALSE(parse_fraction("abc"));
  CHECK_FALSE(parse_fraction("%"));
  CHECK_FALSE(parse_fraction("5%%"));
}
