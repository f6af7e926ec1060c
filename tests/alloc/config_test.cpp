// PYTORCH_CUDA_ALLOC_CONF parsing: every key, PyTorch's roundup intervals, canonical text, errors.
// By PyTorch 2.6's rules unless a case names another release (what changes between releases is
// at the end).
#include <catch2/catch.hpp>

#include "alloc/config.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

using namespace pinbench;
using namespace pinbench::alloc;

namespace {

constexpr pytorch_release v2_6{2, 6};

config parse(std::string_view text, pytorch_release release = v2_6) {
  return parse_config(text, "s.json", "params.config", release);
}

std::string error_of(std::string_view text, pytorch_release release = v2_6) {
  try {
    (void)parse(text, release);
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no error)";
}

bool same(const config& a, const config& b) {
  return a.max_split_size_bytes == b.max_split_size_bytes &&
         a.roundup_power2_divisions == b.roundup_power2_divisions &&
         a.garbage_collection_threshold == b.garbage_collection_threshold &&
         a.expandable_segments == b.expandable_segments &&
         a.max_non_split_rounding_bytes == b.max_non_split_rounding_bytes &&
         a.per_process_memory_fraction == b.per_process_memory_fraction;
}

}  // namespace

TEST_CASE("an empty config gives PyTorch's defaults", "[alloc][config]") {
  for (const char* text : {"", "   ", "\t"}) {
    const config c = parse(text);
    CHECK_FALSE(c.max_split_size_bytes.has_value());
    CHECK(c.roundup_power2_divisions == std::vector<std::size_t>(64, 0));
    CHECK(c.garbage_collection_threshold == 0);
    CHECK_FALSE(c.expandable_segments);
    CHECK(c.divisions_for(1_MiB) == 0);
    CHECK(c.to_string().empty());
  }
}

TEST_CASE("every modelled key is parsed", "[alloc][config]") {
  const config c = parse(
      "max_split_size_mb:128,roundup_power2_divisions:4,garbage_collection_threshold:0.8,"
      "expandable_segments:True");
  CHECK(c.max_split_size_bytes == std::optional<std::size_t>(128_MiB));
  CHECK(c.roundup_power2_divisions == std::vector<std::size_t>(64, 4));
  CHECK(c.garbage_collection_threshold == 0.8);
  CHECK(c.expandable_segments);

  CHECK(parse("max_split_size_mb:21").max_split_size_bytes == 21_MiB);
  CHECK_FALSE(parse("expandable_segments:False").expandable_segments);
  CHECK(parse("garbage_collection_threshold:0.001").garbage_collection_threshold == 0.001);
  // A later repetition wins, as in PyTorch.
  CHECK(parse("max_split_size_mb:64,max_split_size_mb:256").max_split_size_bytes == 256_MiB);
}

TEST_CASE("whitespace around tokens and a trailing comma are tolerated", "[alloc][config]") {
  const config c =
      parse("  max_split_size_mb : 128 ,  roundup_power2_divisions: [ 256:1 , >:8 ] , ");
  CHECK(c.max_split_size_bytes == 128_MiB);
  CHECK(c.divisions_for(1_MiB) == 1);
  CHECK(c.divisions_for(1_GiB) == 8);
  CHECK(parse("roundup_power2_divisions:[256:1,]").divisions_for(300_MiB) == 1);
}

TEST_CASE("roundup_power2_divisions: one value applies to every size", "[alloc][config]") {
  const config c = parse("roundup_power2_divisions:8");
  for (std::size_t bytes : {std::size_t{1}, std::size_t{512}, std::size_t{1_MiB},
                            std::size_t{3_GiB}, std::size_t{1} << 40}) {
    CHECK(c.divisions_for(bytes) == 8);
  }
}

TEST_CASE("roundup_power2_divisions: the list form follows PyTorch 2.6's code", "[alloc][config]") {
  // PyTorch's intervals are indexed by floor(log2(bytes)) - 20, clamped to 0..15: interval j
  // holds sizes in [2^j MiB, 2^(j+1) MiB), interval 0 everything below 2 MiB, interval 15
  // everything from 32 GiB. A list key K (MiB) selects interval log2(K).
  SECTION("the documented example") {
    // 256 -> interval 8 = 1, and the first entry also fills intervals 0..7 with 1;
    // 512 -> interval 9 = 2; 1024 -> interval 10 = 4; ">" fills 10..15 with 8, from the last
    // listed interval itself (PyTorch 2.6's std::fill from last_index), so 1024's 4 is lost.
    // (PyTorch's docs describe 256-512 MiB as getting 2 and 1-2 GiB as 4: 2.6's code gives
    // those ranges 1 and 8.)
    const config c = parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    CHECK(c.divisions_for(512) == 1);          // below 1 MiB: interval 0
    CHECK(c.divisions_for(1_MiB) == 1);        // interval 0
    CHECK(c.divisions_for(100_MiB) == 1);      // log2 = 26 -> interval 6, filled by the first
    CHECK(c.divisions_for(300_MiB) == 1);      // log2 = 28 -> interval 8
    CHECK(c.divisions_for(512_MiB - 1) == 1);  // still interval 8
    CHECK(c.divisions_for(600_MiB) == 2);      // log2 = 29 -> interval 9
    CHECK(c.divisions_for(1_GiB) == 8);        // log2 = 30 -> interval 10, overwritten by ">"
    CHECK(c.divisions_for(1536_MiB) == 8);     // interval 10
    CHECK(c.divisions_for(2_GiB) == 8);        // log2 = 31 -> interval 11, from ">"
    CHECK(c.divisions_for(100_GiB) == 8);      // log2 = 36 -> clamped to interval 15
  }
  SECTION("unlisted intervals between entries stay 0") {
    // 1 -> interval 0 = 4 (nothing below to fill); 4 -> interval 2 = 2; interval 1 untouched.
    const config c = parse("roundup_power2_divisions:[1:4,4:2]");
    CHECK(c.divisions_for(512_KiB) == 4);
    CHECK(c.divisions_for(1_MiB) == 4);
    CHECK(c.divisions_for(3_MiB) == 0);  // log2 = 21 -> interval 1
    CHECK(c.divisions_for(4_MiB) == 2);  // interval 2
    CHECK(c.divisions_for(8_MiB) == 0);  // interval 3
  }
  SECTION("\">\" fills from the last listed interval itself (PyTorch 2.6)") {
    // 64 -> interval 6 = 8 (and 0..5 filled with 8); ">" fills 6..15 with 2.
    const config c = parse("roundup_power2_divisions:[64:8,>:2]");
    CHECK(c.divisions_for(32_MiB) == 8);   // interval 5
    CHECK(c.divisions_for(63_MiB) == 8);   // interval 5
    CHECK(c.divisions_for(64_MiB) == 2);   // interval 6: 8, then 2 from ">"
    CHECK(c.divisions_for(127_MiB) == 2);  // interval 6
    CHECK(c.divisions_for(std::size_t{1} << 40) == 2);
    // ">" alone: last_index starts at 0, so it fills every interval.
    const config d = parse("roundup_power2_divisions:[>:4]");
    CHECK(d.divisions_for(1_MiB) == 4);
    CHECK(d.divisions_for(2_MiB) == 4);
  }
  SECTION("\"[]\" is accepted and changes nothing (PyTorch 2.6)") {
    const config none = parse("roundup_power2_divisions:[]");
    CHECK(none.roundup_power2_divisions == config{}.roundup_power2_divisions);
    CHECK(none.to_string().empty());
    // After the scalar form, "[]" leaves its table as it was.
    const config c = parse("roundup_power2_divisions:4,roundup_power2_divisions:[]");
    CHECK(c.divisions_for(1_MiB) == 4);
    CHECK(c.divisions_for(1_GiB) == 4);
  }
  SECTION("keys beyond the last interval are clamped to it; 0 disables rounding") {
    // 65536 MiB -> log2 16 -> clamped to 15; the first entry fills 0..14 as well.
    const config c = parse("roundup_power2_divisions:[65536:2]");
    CHECK(c.divisions_for(1_MiB) == 2);
    CHECK(c.divisions_for(64_GiB) == 2);
    const config d = parse("roundup_power2_divisions:[1024:0,>:4]");
    CHECK(d.divisions_for(1_MiB) == 0);
    CHECK(d.divisions_for(512_MiB) == 0);  // interval 9, filled by the first entry
    CHECK(d.divisions_for(1_GiB) == 4);    // interval 10: 0, then 4 from ">"
    CHECK(d.divisions_for(4_GiB) == 4);
  }
  SECTION("a repeated key edits the table parsed so far") {
    // All 4, then [256:1] sets intervals 0..8 to 1 and leaves 9..15 at 4.
    const config c = parse("roundup_power2_divisions:4,roundup_power2_divisions:[256:1]");
    CHECK(c.divisions_for(100_MiB) == 1);
    CHECK(c.divisions_for(300_MiB) == 1);
    CHECK(c.divisions_for(512_MiB) == 4);
  }
  SECTION("the table is indexed by log2 of bytes") {
    const config c = parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    REQUIRE(c.roundup_power2_divisions.size() == 64);
    CHECK(c.roundup_power2_divisions[9] == 1);   // 512 B .. 1 KiB
    CHECK(c.roundup_power2_divisions[29] == 2);  // 512 MiB .. 1 GiB
    CHECK(c.roundup_power2_divisions[63] == 8);
  }
}

TEST_CASE("to_string is canonical and parses back into an equal config", "[alloc][config]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"expandable_segments:False", ""},
      {"expandable_segments:True", "expandable_segments:True"},
      {" garbage_collection_threshold: 0.8 ", "garbage_collection_threshold:0.8"},
      {"max_split_size_mb:128", "max_split_size_mb:128"},
      {"roundup_power2_divisions:4", "roundup_power2_divisions:4"},
      {"roundup_power2_divisions:[1:4,2:4,4:4,>:4]", "roundup_power2_divisions:4"},
      // ">" overwrites the last listed interval (PyTorch 2.6): the canonical form shows it.
      {"roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
       "roundup_power2_divisions:[256:1,512:2,1024:8,>:8]"},
      {"roundup_power2_divisions:[256:1,1024:4,>:8]",
       "roundup_power2_divisions:[256:1,1024:8,>:8]"},
      {"roundup_power2_divisions:[256:1,512:0,>:8]", "roundup_power2_divisions:[256:1,512:8,>:8]"},
      {"roundup_power2_divisions:[256:1,512:2,>:0]", "roundup_power2_divisions:[256:1]"},
      {"roundup_power2_divisions:[1:4,4:2]", "roundup_power2_divisions:[1:4,4:2]"},
      {"roundup_power2_divisions:[1:4,32768:2]", "roundup_power2_divisions:[1:4,32768:2]"},
      {"roundup_power2_divisions:[>:4]", "roundup_power2_divisions:4"},
      {"roundup_power2_divisions:[]", ""},
      {"expandable_segments:True,garbage_collection_threshold:0.6,roundup_power2_divisions:2,"
       "max_split_size_mb:512",
       "max_split_size_mb:512,roundup_power2_divisions:2,garbage_collection_threshold:0.6,"
       "expandable_segments:True"},
  };
  for (const auto& [text, canonical] : cases) {
    INFO(text);
    const config c = parse(text);
    CHECK(c.to_string() == canonical);
    const config back = parse(c.to_string());
    CHECK(same(c, back));
    CHECK(back.to_string() == canonical);
  }
}

TEST_CASE("errors name the source, the key, the value and what was expected", "[alloc][config]") {
  CHECK(
      error_of("max_split_size:128") ==
      R"(s.json: params.config: unknown allocator option "max_split_size" (did you mean "max_split_size_mb"?))");
  CHECK(
      error_of("zzzz:1") ==
      R"(s.json: params.config: unknown allocator option "zzzz"; the options are "max_split_size_mb", "roundup_power2_divisions", "garbage_collection_threshold", "expandable_segments", "max_non_split_rounding_mb" or "per_process_memory_fraction")");
  for (const char* key : {"backend", "release_lock_on_cudamalloc", "pinned_use_cuda_host_register",
                          "pinned_num_register_threads", "pinned_use_background_threads"}) {
    CHECK(error_of(std::string(key) + ":True") ==
          "s.json: params.config: \"" + std::string(key) +
              "\" is a PyTorch option that pinbench does not model");
  }
  CHECK(
      error_of("max_split_size_mb:20") ==
      R"(s.json: params.config: max_split_size_mb: expected an integer number of MiB greater than 20, got "20")");
  CHECK(
      error_of("max_split_size_mb:128MB") ==
      R"(s.json: params.config: max_split_size_mb: expected an integer number of MiB greater than 20, got "128MB")");
  CHECK(error_of("max_split_size_mb:-5").ends_with(R"(got "-5")"));
  CHECK(
      error_of("garbage_collection_threshold:1") ==
      R"(s.json: params.config: garbage_collection_threshold: expected a number between 0 and 1 (both excluded), got "1")");
  CHECK(error_of("garbage_collection_threshold:0").ends_with(R"(got "0")"));
  CHECK(error_of("garbage_collection_threshold:nan").ends_with(R"(got "nan")"));
  CHECK(error_of("expandable_segments:true") ==
        R"(s.json: params.config: expandable_segments: expected True or False, got "true")");
  CHECK(
      error_of("roundup_power2_divisions:3") ==
      R"(s.json: params.config: roundup_power2_divisions: expected a power of two or a list like [256:1,512:2,>:8], got "3")");
  CHECK(error_of("roundup_power2_divisions:0").ends_with(R"(got "0")"));
  CHECK(
      error_of("roundup_power2_divisions:[300:2]") ==
      R"(s.json: params.config: roundup_power2_divisions: expected each interval start to be a power of two (in MiB) or ">", got "300" in "[300:2]")");
  CHECK(
      error_of("roundup_power2_divisions:[256:3]") ==
      R"(s.json: params.config: roundup_power2_divisions: expected the divisions to be a power of two or 0, got "3" in "[256:3]")");
  CHECK(
      error_of("roundup_power2_divisions:[256]") ==
      R"(s.json: params.config: roundup_power2_divisions: expected SIZE_MB:DIVISIONS entries, got "256" in "[256]")");
  CHECK(error_of("roundup_power2_divisions:[256:1") ==
        R"(s.json: params.config: missing "]" in "roundup_power2_divisions:[256:1")");
  CHECK(error_of("roundup_power2_divisions:256:1]") ==
        R"(s.json: params.config: unbalanced "]" in "roundup_power2_divisions:256:1]")");
  CHECK(error_of("max_split_size_mb") ==
        R"(s.json: params.config: expected key:value, got "max_split_size_mb")");
  CHECK(
      error_of("max_split_size_mb:128,,expandable_segments:True") ==
      R"(s.json: params.config: empty option between commas in "max_split_size_mb:128,,expandable_segments:True")");

  // The environment variable as the source: no file, the variable's name as the path.
  try {
    (void)parse_config("max_split_size_mb:1", "", "PYTORCH_CUDA_ALLOC_CONF", v2_6);
    FAIL("no error");
  } catch (const input_error& e) {
    CHECK(
        std::string(e.what()) ==
        R"(PYTORCH_CUDA_ALLOC_CONF: max_split_size_mb: expected an integer number of MiB greater than 20, got "1")");
    CHECK(e.file().empty());
    CHECK(e.json_path() == "PYTORCH_CUDA_ALLOC_CONF");
  }
  // Every message is one line.
  CHECK(error_of("roundup_power2_divisions:[\n256:3]").find('\n') == std::string::npos);
}

TEST_CASE("what PyTorch releases read differently", "[alloc][config][pytorch]") {
  constexpr pytorch_release v2_0{2, 0}, v2_3{2, 3}, v2_4{2, 4}, v2_5{2, 5}, v2_10{2, 10};
  SECTION("\">\" fills from one above the last listed interval from 2.10") {
    // 2.6: intervals 6..15 get 2 (interval 6's 8 overwritten); 2.10: 7..15, interval 6 keeps 8.
    CHECK(parse("roundup_power2_divisions:[64:8,>:2]", v2_6).divisions_for(64_MiB) == 2);
    const config c = parse("roundup_power2_divisions:[64:8,>:2]", v2_10);
    CHECK(c.divisions_for(32_MiB) == 8);
    CHECK(c.divisions_for(64_MiB) == 8);
    CHECK(c.divisions_for(128_MiB) == 2);
    // ">" alone: 2.10 leaves interval 0 (below 2 MiB) as it was.
    const config d = parse("roundup_power2_divisions:[>:4]", v2_10);
    CHECK(d.divisions_for(1_MiB) == 0);
    CHECK(d.divisions_for(2_MiB) == 4);
    // The canonical text parses back to the same table by the same release's rules.
    for (const char* text :
         {"roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
          "roundup_power2_divisions:[64:8,>:2]", "roundup_power2_divisions:[>:4]",
          "roundup_power2_divisions:[1:4,4:0,>:2]"}) {
      INFO(text);
      const config e = parse(text, v2_10);
      CHECK(same(parse(e.to_string(), v2_10), e));
    }
  }
  SECTION("max_split_size_mb and max_non_split_rounding_mb may be 20 from 2.10") {
    CHECK(parse("max_split_size_mb:20", v2_10).max_split_size_bytes == 20_MiB);
    CHECK(error_of("max_split_size_mb:20", v2_6).find("greater than 20") != std::string::npos);
    CHECK(parse("max_non_split_rounding_mb:64", v2_6).max_non_split_rounding_bytes == 64_MiB);
    CHECK(parse("max_non_split_rounding_mb:20", v2_10).max_non_split_rounding_bytes == 20_MiB);
  }
  SECTION("an option a release does not have is refused, naming the release it came in") {
    CHECK(
        error_of("max_non_split_rounding_mb:64", v2_5) ==
        R"(s.json: params.config: "max_non_split_rounding_mb" is not an option of PyTorch 2.5 (it came in 2.6))");
    CHECK(
        error_of("expandable_segments:True", v2_0) ==
        R"(s.json: params.config: "expandable_segments" is not an option of PyTorch 2.0 (it came in 2.1))");
    CHECK(
        error_of("per_process_memory_fraction:0.5", v2_6) ==
        R"(s.json: params.config: "per_process_memory_fraction" is not an option of PyTorch 2.6 (it came in 2.10))");
    CHECK(parse("per_process_memory_fraction:0.5", v2_10).per_process_memory_fraction == 0.5);
    CHECK(error_of("per_process_memory_fraction:1.5", v2_10).ends_with(R"(got "1.5")"));
  }
  SECTION("0 divisions in the list: refused before 2.4") {
    CHECK(parse("roundup_power2_divisions:[256:1,512:0]", v2_4).divisions_for(600_MiB) == 0);
    CHECK(
        error_of("roundup_power2_divisions:[256:1,512:0]", v2_3) ==
        R"(s.json: params.config: roundup_power2_divisions: expected the divisions to be a power of two (0 came in PyTorch 2.4), got "0" in "[256:1,512:0]")");
  }
  SECTION("the newest release is the default") {
    CHECK(parse_config("", {}, {}).release == pytorch_release::newest());
    CHECK(parse_config("roundup_power2_divisions:[>:4]", {}, {}).divisions_for(1_MiB) == 0);
  }
}
