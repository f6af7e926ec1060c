// The pickle reader on hand-built bytes: each opcode family, the memo, each refused opcode and
// each kind of malformed input. The writer: read back, compared with CPython's bytes, and loaded
// by Python itself where python3 is installed.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/pickle.hpp"
#include "scratch_dir.hpp"
#include "skip.hpp"
#include "support.hpp"

using pinbench::input_error;
using pinbench::pickle_document;
using pinbench::read_pickle;
using pinbench::write_pickle;
using json = nlohmann::json;

namespace pickle_test {

std::string bytes(std::initializer_list<int> v) {
  std::string s;
  for (const int b : v) s.push_back(static_cast<char>(b));
  return s;
}
std::string le(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}
// SHORT_BINUNICODE
std::string str(const std::string& s) {
  return bytes({0x8c}) + le(s.size(), 1) + s;
}
std::string p4(const std::string& body) {
  return bytes({0x80, 4}) + body + ".";
}
std::string p2(const std::string& body) {
  return bytes({0x80, 2}) + body + ".";
}

json read(const std::string& pickle) {
  return read_pickle(pickle, "t.pickle");
}

// Bytes as hex, so that a mismatch prints readably.
std::string hex(const std::string& s) {
  std::string out;
  for (const char c : s) {
    constexpr const char* digits = "0123456789abcdef";
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 0xf];
    out += ' ';
  }
  return out;
}

json round_trip(const json& v) {
  return read(write_pickle(v));
}

std::string error_of(const std::string& pickle) {
  try {
    (void)read(pickle);
  } catch (const input_error& e) {
    const std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    CHECK(m.rfind("t.pickle: ", 0) == 0);
    return m;
  }
  return "(accepted)";
}

}  // namespace pickle_test

using namespace pickle_test;

TEST_CASE("pickle: scalars", "[core][pickle]") {
  CHECK(read(p4("N")) == json(nullptr));
  CHECK(read(p4(bytes({0x88}))) == json(true));
  CHECK(read(p4(bytes({0x89}))) == json(false));
  CHECK(read(p4("K" + le(200, 1))) == json(200));
  CHECK(read(p4("M" + le(60000, 2))) == json(60000));
  CHECK(read(p4("J" + le(0xfffffffe, 4))) == json(-2));  // BININT is signed
  // LONG1: little-endian two's complement, any length within 64 bits.
  CHECK(read(p4(bytes({0x8a, 0}))) == json(0));
  CHECK(read(p4(bytes({0x8a, 1, 0xff}))) == json(-1));
  CHECK(read(p4(bytes({0x8a, 2, 0x00, 0x80}))) == json(-32768));
  CHECK(read(p4(bytes({0x8a, 3, 0x00, 0x80, 0x00}))) == json(32768));
  CHECK(read(p4(bytes({0x8a, 6, 0, 0, 0, 0, 0x3a, 0x7f}))) == json(0x7f3a00000000LL));
  CHECK(read(p4(bytes({0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80}))) ==
        json(std::numeric_limits<std::int64_t>::min()));
  const json max_u = read(p4(bytes({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0})));
  CHECK(max_u.get<std::uint64_t>() == std::numeric_limits<std::uint64_t>::max());
  CHECK(read(p4(bytes({0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0x80, 0xff}))) ==
        json(std::numeric_limits<std::int64_t>::min()));  // a redundant sign byte
  CHECK(read(p4(bytes({0x8b}) + le(2, 4) + bytes({0x34, 0x12}))) == json(0x1234));  // LONG4
  CHECK(read(p4("G" + bytes({0x3f, 0xf8, 0, 0, 0, 0, 0, 0}))) == json(1.5));        // big-endian
}

TEST_CASE("pickle: strings and bytes", "[core][pickle]") {
  CHECK(read(p4(str("alloc"))) == json("alloc"));
  CHECK(read(p4("X" + le(3, 4) + "abc")) == json("abc"));
  CHECK(read(p4(bytes({0x8d}) + le(2, 8) + "hi")) == json("hi"));  // BINUNICODE8
  CHECK(read(p2("U" + le(2, 1) + "py")) == json("py"));            // SHORT_BINSTRING
  CHECK(read(p2("T" + le(3, 4) + "two")) == json("two"));          // BINSTRING
  CHECK(read(p4(str("\xc3\xa9t\xc3\xa9"))) == json("\xc3\xa9t\xc3\xa9"));
  // Bytes become a JSON binary value.
  const json b = read(p4("C" + le(3, 1) + bytes({0, 1, 2})));
  REQUIRE(b.is_binary());
  CHECK(static_cast<const std::vector<std::uint8_t>&>(b.get_binary()) ==
        std::vector<std::uint8_t>{0, 1, 2});
  CHECK(read(p4("B" + le(1, 4) + "x")).is_binary());
  CHECK(read(p4(bytes({0x8e}) + le(1, 8) + "x")).is_binary());  // BINBYTES8
  CHECK(read(p4(bytes({0x96}) + le(1, 8) + "x")).is_binary());  // BYTEARRAY8
  // Invalid UTF-8 (and a surrogate) is replaced, so that the JSON always serializes.
  const json bad =
      read(p4(str("a\xff"
                  "b\xed\xa0\x80")));
  CHECK(bad == json("a\xef\xbf\xbd"
                    "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
  CHECK_NOTHROW(bad.dump());
}

TEST_CASE("pickle: lists, tuples, sets and dicts", "[core][pickle]") {
  // EMPTY_LIST APPEND, MARK APPENDS
  CHECK(read(p4("]K" + le(1, 1) + "a(K" + le(2, 1) + "K" + le(3, 1) + "e")) == json({1, 2, 3}));
  CHECK(read(p2("(K" + le(1, 1) + "N" + "l")) == json::array({1, nullptr}));  // LIST
  CHECK(read(p4(")")) == json::array());                                      // EMPTY_TUPLE
  CHECK(read(p4("(K" + le(1, 1) + "K" + le(2, 1) + "t")) == json({1, 2}));    // TUPLE
  CHECK(read(p4("K" + le(1, 1) + bytes({0x85}))) == json({1}));               // TUPLE1
  CHECK(read(p4("K" + le(1, 1) + "K" + le(2, 1) + bytes({0x86}))) == json({1, 2}));
  CHECK(read(p4("K" + le(1, 1) + "K" + le(2, 1) + "K" + le(3, 1) + bytes({0x87}))) ==
        json({1, 2, 3}));
  // EMPTY_SET ADDITEMS, FROZENSET: arrays
  CHECK(read(p4(bytes({0x8f}) + "(K" + le(7, 1) + bytes({0x90}))) == json({7}));
  CHECK(read(p4("(K" + le(7, 1) + bytes({0x91}))) == json({7}));
  // EMPTY_DICT SETITEM, SETITEMS, DICT; an integer key becomes its decimal text; a key set
  // twice keeps its last value, as in Python.
  CHECK(read(p4("}" + str("a") + "K" + le(1, 1) + "s")) == json({{"a", 1}}));
  CHECK(read(p4("}(" + str("a") + "K" + le(1, 1) + "K" + le(2, 1) + str("two") + "u")) ==
        json({{"a", 1}, {"2", "two"}}));
  CHECK(read(p2("(" + str("k") + "N" + "d")) == json({{"k", nullptr}}));
  CHECK(read(p4("}(" + str("a") + "K" + le(1, 1) + str("a") + "K" + le(2, 1) + "u")) ==
        json({{"a", 2}}));
  CHECK(read(p4("}J" + le(0xffffffff, 4) + "Ns")) == json({{"-1", nullptr}}));
}

TEST_CASE("pickle: stack opcodes and framing", "[core][pickle]") {
  CHECK(read(p4("K" + le(1, 1) + "2" + bytes({0x86}))) == json({1, 1}));  // DUP
  CHECK(read(p4("K" + le(1, 1) + "K" + le(2, 1) + "0")) == json(1));      // POP
  CHECK(read(p4("K" + le(1, 1) + "(K" + le(2, 1) + "1")) == json(1));     // POP_MARK
  CHECK(read(p4("K" + le(1, 1) + "(0")) == json(1));  // POP with nothing above the MARK
  // FRAME groups opcodes; its length must fit in the input.
  CHECK(read(bytes({0x80, 4, 0x95}) + le(3, 8) + "K" + le(5, 1) + ".") == json(5));
  for (const int protocol : {2, 3, 4, 5}) CHECK(read(bytes({0x80, protocol, 'N', '.'})).is_null());
}

TEST_CASE("pickle: the memo shares values, as Python does", "[core][pickle]") {
  // PyTorch's and Python's picklers memoize a dict right after EMPTY_DICT and fill it
  // afterwards: a later BINGET must see it filled, not the empty dict that was memoized.
  const std::string filled_later =
      "]"
      "\x94"  // outer list, memo 0
      "}"
      "\x94"  // dict, memo 1
      "(" +
      str("k") + "K" + le(1, 1) + "u"  // filled after MEMOIZE
      + "a" + "h" + le(1, 1) + "a";    // APPEND it, then BINGET 1 and APPEND
  CHECK(read(p4(filled_later)) == json::array({{{"k", 1}}, {{"k", 1}}}));
  // Mutated after the get, too: the list got first, appended to afterwards.
  const std::string mutated_after_get =
      "]q" + le(0, 1) + "]q" + le(1, 1) + "a" + "h" + le(1, 1) + "K" + le(9, 1) + "a" + "0";
  // stack: outer list [inner]; BINGET inner; append 9 to inner; POP it: outer = [[9]]
  CHECK(read(p4(mutated_after_get)) == json::array({json::array({9})}));
  // BINPUT/LONG_BINPUT and BINGET/LONG_BINGET
  CHECK(read(p4(str("s") + "r" + le(70000, 4) + "j" + le(70000, 4) + bytes({0x86}))) ==
        json({"s", "s"}));
  CHECK(read(p4(str("s") + "q" + le(3, 1) + "h" + le(3, 1) + bytes({0x86}))) == json({"s", "s"}));

  // Stored once: the document shares the value, whatever the number of references.
  const std::string twice =
      p4("}\x94(" + str("a") + "K" + le(1, 1) + "u" + "h" + le(0, 1) + bytes({0x86}));
  const auto doc = pickle_document::read(twice, "t.pickle");
  const auto items = doc.items(doc.root());
  REQUIRE(items.size() == 2);
  CHECK(items[0] == items[1]);
  CHECK(doc.to_uint64(*doc.member(items[0], "a")) == 1u);
}

TEST_CASE("pickle: opcodes that name or run code are refused, with offset and name",
          "[core][pickle]") {
  struct refused {
    std::string body;
    std::string name;
  };
  const std::vector<refused> cases{
      {"cposix\nsystem\n", "GLOBAL (0x63)"},
      {str("posix") + str("system") + bytes({0x93}), "STACK_GLOBAL (0x93)"},
      {"NN\x85R", "REDUCE (0x52)"},
      {"}Nb", "BUILD (0x62)"},
      {"(iposix\nsystem\n", "INST (0x69)"},
      {"(No", "OBJ (0x6f)"},
      {"N)"
       "\x81",
       "NEWOBJ (0x81)"},
      {"N)}"
       "\x92",
       "NEWOBJ_EX (0x92)"},
      {"P1\n", "PERSID (0x50)"},
      {"NQ", "BINPERSID (0x51)"},
      {"\x82\x01", "EXT1 (0x82)"},
      {"\x83\x01\x00", "EXT2 (0x83)"},
      {"\x84\x01\x00\x00\x00", "EXT4 (0x84)"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const std::string m = error_of(p4(c.body));
    CHECK_THAT(m, Catch::Contains("opcode " + c.name +
                                  " refused: a memory snapshot holds only "
                                  "plain data, and loading code from a file is never done"));
    CHECK_THAT(m, Catch::StartsWith("t.pickle: offset "));
  }
  // The offset is the opcode's own: GLOBAL right after PROTO is at 2.
  CHECK_THAT(error_of(p2("cposix\nsystem\n")),
             Catch::StartsWith("t.pickle: offset 2: opcode GLOBAL"));
  CHECK_THAT(error_of(p4("N" + str("x") + "\x93")),
             Catch::StartsWith("t.pickle: offset 6: opcode STACK_GLOBAL"));
  CHECK_THAT(error_of(p4("\xff")), Catch::Contains("offset 2: unknown opcode 0xff"));
  CHECK_THAT(error_of(p4("I1\n")), Catch::Contains("opcode INT (0x49) not supported"));
  CHECK_THAT(error_of(p4("\x97")), Catch::Contains("opcode NEXT_BUFFER (0x97) not supported"));
  CHECK_THAT(error_of(bytes({0x80, 6, 'N', '.'})), Catch::Contains("protocol 6 is not supported"));
}

TEST_CASE("pickle: malformed input is a one-line error naming the offset", "[core][pickle]") {
  CHECK_THAT(error_of(""), Catch::Contains("offset 0: the pickle ends without STOP"));
  CHECK_THAT(error_of(bytes({0x80, 4, 'N'})),
             Catch::Contains("offset 3: the pickle ends without STOP"));
  CHECK_THAT(error_of(bytes({0x80, 4, 'J', 1, 2})),
             Catch::Contains("offset 2: opcode BININT (0x4a) needs 4 more byte(s), but the "
                             "input ends after 2"));
  // A claimed length beyond the input is refused before anything is allocated.
  CHECK_THAT(error_of(p4(bytes({0x8d}) + le(std::uint64_t{1} << 62, 8) + "abc")),
             Catch::Contains("opcode BINUNICODE8 (0x8d) claims a length of 4611686018427387904 "
                             "byte(s), but only 4 are left"));
  CHECK_THAT(error_of(p4("X" + le(0xffffffff, 4))), Catch::Contains("claims a length"));
  CHECK_THAT(error_of(bytes({0x80, 4, 0x95}) + le(1000, 8) + "N."), Catch::Contains("FRAME"));
  CHECK_THAT(error_of(p4(bytes({0x8b}) + le(0xffffffff, 4))), Catch::Contains("negative length"));
  // Stack underflow, MARK missing, memo never defined.
  CHECK_THAT(error_of(p4("")), Catch::Contains("offset 2: stack underflow: opcode STOP"));
  CHECK_THAT(error_of(p4("Na")), Catch::Contains("offset 3: stack underflow: opcode APPEND"));
  CHECK_THAT(error_of(p4("](Na")), Catch::Contains("stack underflow: opcode APPEND"));
  CHECK_THAT(error_of(p4("]Ne")), Catch::Contains("opcode APPENDS (0x65) needs a MARK"));
  CHECK_THAT(error_of(p4("Nt")), Catch::Contains("opcode TUPLE (0x74) needs a MARK"));
  CHECK_THAT(error_of(p4("h" + le(4, 1))), Catch::Contains("memo index 4 was never defined"));
  CHECK_THAT(error_of(p4("\x94")), Catch::Contains("stack underflow: opcode MEMOIZE"));
  // Trailing bytes, leftovers, wrong targets and keys.
  CHECK_THAT(error_of(p4("N") + "xyz"), Catch::Contains("offset 4: 3 byte(s) after STOP"));
  CHECK_THAT(error_of(p4("NN")), Catch::Contains("STOP leaves 1 value(s)"));
  CHECK_THAT(error_of(p4("(N")), Catch::Contains("and 1 MARK(s)"));
  CHECK_THAT(error_of(p4("}Na")), Catch::Contains("opcode APPEND (0x61) adds to a list, but the "
                                                  "stack holds a dict"));
  CHECK_THAT(error_of(p4("]" + str("k") + "Ns")),
             Catch::Contains("adds to a dict, but the stack holds a list"));
  CHECK_THAT(error_of(p4("}]Ns")),
             Catch::Contains("a dict key must be a string or an integer, got a list"));
  CHECK_THAT(error_of(p4("}(N\x88u")), Catch::Contains("got None"));
  CHECK_THAT(error_of(p4("}(" + str("a") + "u")), Catch::Contains("an odd number of items"));
  // Integers beyond 64 bits.
  CHECK_THAT(error_of(p4(bytes({0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1}))),
             Catch::Contains("LONG1 (0x8a): the integer does not fit in 64 bits"));
  CHECK_THAT(error_of(p4(bytes({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff}))),
             Catch::Contains("does not fit in 64 bits"));
}

TEST_CASE("pickle: nesting, cycles and shared-reference bombs are bounded", "[core][pickle]") {
  // 600 lists nested: read, but deeper than the walk allows.
  CHECK_THAT(error_of(p2(std::string(600, '(') + "]" + std::string(600, 'l'))),
             Catch::Contains("containers nest deeper than 512 levels"));
  // A list that holds itself (through the memo) is caught by the same bound.
  CHECK_THAT(error_of(p4("]\x94h" + le(0, 1) + "a")), Catch::Contains("(or one holds itself)"));
  // 40 levels of [x, x]: 2^40 values once copied; the document holds 40 lists.
  std::string bomb = "]";
  for (int level = 0; level < 40; ++level) {
    bomb += "q" + le(0, 1) + "0" + "h" + le(0, 1) + "h" + le(0, 1) + bytes({0x86});
  }
  CHECK_THAT(error_of(p4(bomb)), Catch::Contains("make more values than its size allows"));
  const auto doc = pickle_document::read(p4(bomb), "t.pickle");
  CHECK(doc.items(doc.root()).size() == 2);
}

TEST_CASE("pickle: written values read back as they were", "[core][pickle]") {
  constexpr auto i64_min = std::numeric_limits<std::int64_t>::min();
  constexpr auto i64_max = std::numeric_limits<std::int64_t>::max();
  constexpr auto u64_max = std::numeric_limits<std::uint64_t>::max();
  for (const std::int64_t i :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{255}, std::int64_t{256}, std::int64_t{65535},
        std::int64_t{65536}, std::int64_t{-1}, std::int64_t{-255}, std::int64_t{-256},
        std::int64_t{-65536}, std::int64_t{2147483647}, std::int64_t{2147483648},
        std::int64_t{-2147483648}, std::int64_t{-2147483649}, std::int64_t{1} << 40,
        -(std::int64_t{1} << 40), i64_min, i64_max, i64_min + 1}) {
    INFO(i);
    const json back = round_trip(i);
    REQUIRE(back.is_number_integer());
    CHECK(back.get<std::int64_t>() == i);
  }
  for (const std::uint64_t u : {std::uint64_t{7}, std::uint64_t{1} << 63, u64_max - 1, u64_max}) {
    INFO(u);
    const json back = round_trip(u);
    REQUIRE(back.is_number_integer());
    CHECK(back.get<std::uint64_t>() == u);
  }
  for (const double d :
       {0.0, 0.5, -2.25, 1e300, -1e-300, 3.141592653589793, std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::denorm_min()}) {
    INFO(d);
    const json back = round_trip(d);
    REQUIRE(back.is_number_float());
    CHECK(back.get<double>() == d);
  }
  CHECK(std::signbit(round_trip(-0.0).get<double>()));
  CHECK(std::isnan(round_trip(std::nan("")).get<double>()));
  CHECK(round_trip(nullptr).is_null());
  CHECK(round_trip(true) == json(true));
  CHECK(round_trip(false) == json(false));

  // Strings by length: SHORT_BINUNICODE up to 255 bytes, BINUNICODE beyond, unframed from 64 KiB.
  for (const std::size_t n : {0, 1, 255, 256, 65535, 65536, 70000}) {
    INFO(n);
    const std::string text(n, 'x');
    CHECK(round_trip(text) == json(text));
  }
  const std::string unicode = "\xc3\xa9t\xc3\xa9 \xe2\x80\xa6 \xf0\x9f\x9a\x80 \xe4\xb8\xad";
  CHECK(round_trip(unicode) == json(unicode));
  for (const std::size_t n : {0, 3, 255, 256, 70000}) {
    INFO(n);
    std::vector<std::uint8_t> raw(n);
    for (std::size_t k = 0; k < n; ++k) raw[k] = static_cast<std::uint8_t>(k * 7);
    const json back = round_trip(json::binary(raw));
    REQUIRE(back.is_binary());
    CHECK(static_cast<const std::vector<std::uint8_t>&>(back.get_binary()) == raw);
  }

  CHECK(round_trip(json::object()) == json::object());
  CHECK(round_trip(json::array()) == json::array());
  CHECK(round_trip(json::array({1})) == json::array({1}));
  CHECK(round_trip(json{{"a", 1}}) == json{{"a", 1}});
  const json block = {{"size", 512}, {"state", "free"}};
  const json segment = {
      {"address", u64_max}, {"blocks", json::array({block})}, {"empty", json::object()}};
  const json nested = {
      {"segments", json::array({segment})},
      {"list", json::array({json::array(), json::array({nullptr, true, 0.5, "s"})})},
      {unicode, -7}};
  CHECK(round_trip(nested) == nested);

  // 2500 items: two full batches of 1000 and one of 500; 2000: two full ones (and, in a dict,
  // CPython's empty batch after them); 1001: a last batch of one.
  for (const int n : {2, 1000, 1001, 2000, 2500}) {
    INFO(n);
    json dict = json::object();
    json list = json::array();
    for (int i = 0; i < n; ++i) {
      dict["k" + std::to_string(i)] = i;
      list.push_back(fmt::format("v{}", i));
    }
    CHECK(round_trip(dict) == dict);
    CHECK(round_trip(list) == list);
  }

  // A document read from it, not only its JSON.
  const auto doc = pickle_document::read(write_pickle(nested), "w.pickle");
  const auto segments = doc.items(*doc.member(doc.root(), "segments"));
  REQUIRE(segments.size() == 1);
  CHECK(doc.to_uint64(*doc.member(segments[0], "address")) == u64_max);
  CHECK(doc.type_of(*doc.member(segments[0], "blocks")) == pickle_document::type::list);
  CHECK(doc.to_int64(*doc.member(doc.root(), unicode)) == -7);
}

TEST_CASE("pickle: written bytes are CPython's with its memo off", "[core][pickle]") {
  // Expected: Python 3.11's pickle.dumps(VALUE, protocol=4). Scalars have no memo entry, so
  // pickle.dumps writes exactly these; every container, str and bytes gets a MEMOIZE there, which
  // write_pickle leaves out, so theirs come from a pickle.Pickler(f, 4) with `fast = True` (the
  // memo off), which writes the same bytes without MEMOIZE (and a FRAME length to match).
  // Fewer than 4 bytes between PROTO and the end get no FRAME, as in CPython.
  const auto framed = [](const std::string& body) {
    return bytes({0x80, 4, 0x95}) + le(body.size(), 8) + body;
  };
  CHECK(hex(write_pickle(nullptr)) == hex(bytes({0x80, 4, 'N', '.'})));
  CHECK(hex(write_pickle(true)) == hex(bytes({0x80, 4, 0x88, '.'})));
  CHECK(hex(write_pickle(false)) == hex(bytes({0x80, 4, 0x89, '.'})));
  CHECK(hex(write_pickle(0)) == hex(bytes({0x80, 4, 'K', 0x00, '.'})));
  CHECK(hex(write_pickle(255)) == hex(bytes({0x80, 4, 'K', 0xff, '.'})));
  CHECK(hex(write_pickle(256)) == hex(framed(bytes({'M', 0x00, 0x01, '.'}))));
  CHECK(hex(write_pickle(65535)) == hex(framed(bytes({'M', 0xff, 0xff, '.'}))));
  CHECK(hex(write_pickle(65536)) == hex(framed(bytes({'J', 0x00, 0x00, 0x01, 0x00, '.'}))));
  CHECK(hex(write_pickle(-1)) == hex(framed(bytes({'J', 0xff, 0xff, 0xff, 0xff, '.'}))));
  CHECK(hex(write_pickle(-2147483648LL)) == hex(framed(bytes({'J', 0, 0, 0, 0x80, '.'}))));
  CHECK(hex(write_pickle(2147483648LL)) ==
        hex(framed(bytes({0x8a, 5, 0x00, 0x00, 0x00, 0x80, 0x00, '.'}))));
  CHECK(hex(write_pickle(-2147483649LL)) ==
        hex(framed(bytes({0x8a, 5, 0xff, 0xff, 0xff, 0x7f, 0xff, '.'}))));
  CHECK(hex(write_pickle(std::numeric_limits<std::int64_t>::max())) ==
        hex(framed(bytes({0x8a, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '.'}))));
  CHECK(hex(write_pickle(std::numeric_limits<std::int64_t>::min())) ==
        hex(framed(bytes({0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80, '.'}))));
  CHECK(hex(write_pickle(std::uint64_t{1} << 63)) ==
        hex(framed(bytes({0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, '.'}))));
  CHECK(hex(write_pickle(std::numeric_limits<std::uint64_t>::max())) ==
        hex(framed(bytes({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, '.'}))));
  CHECK(hex(write_pickle(0.5)) == hex(framed(bytes({'G', 0x3f, 0xe0, 0, 0, 0, 0, 0, 0, '.'}))));
  CHECK(hex(write_pickle(1e300)) ==
        hex(framed(bytes({'G', 0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c, '.'}))));

  // pickle.dumps({"a": 1}, protocol=4) is 80 04 95 0a.. } 94 8c 01 61 94 K 01 s . (two MEMOIZE).
  CHECK(hex(write_pickle(json{{"a", 1}})) ==
        hex(framed(bytes({'}', 0x8c, 1, 'a', 'K', 1, 's', '.'}))));
  CHECK(hex(write_pickle(json::array({1, 2}))) ==
        hex(framed(bytes({']', '(', 'K', 1, 'K', 2, 'e', '.'}))));
  CHECK(hex(write_pickle(json::array({1}))) == hex(framed(bytes({']', 'K', 1, 'a', '.'}))));
  CHECK(hex(write_pickle(json::object())) == hex(bytes({0x80, 4, '}', '.'})));
  CHECK(hex(write_pickle(json::array())) == hex(bytes({0x80, 4, ']', '.'})));
  CHECK(hex(write_pickle("")) == hex(bytes({0x80, 4, 0x8c, 0, '.'})));
  CHECK(hex(write_pickle("\xc3\xa9")) == hex(framed(bytes({0x8c, 2, 0xc3, 0xa9, '.'}))));
  CHECK(hex(write_pickle(json::binary({}))) == hex(bytes({0x80, 4, 'C', 0, '.'})));
  CHECK(hex(write_pickle(json::binary({'x'}))) == hex(framed(bytes({'C', 1, 'x', '.'}))));
  // {"a": [1, "é", b"x", None, True, 0.5], "b": {}}
  const json mixed = {{"a", json::array({1, "\xc3\xa9", json::binary({'x'}), nullptr, true, 0.5})},
                      {"b", json::object()}};
  CHECK(hex(write_pickle(mixed)) ==
        hex(framed(bytes({'}',  '(', 0x8c, 1,   'a',  ']',  '(', 'K',  1,    0x8c, 2, 0xc3,
                          0xa9, 'C', 1,    'x', 'N',  0x88, 'G', 0x3f, 0xe0, 0,    0, 0,
                          0,    0,   0,    'e', 0x8c, 1,    'b', '}',  'u',  '.'}))));
}

TEST_CASE("pickle: written frames and long strings are placed as CPython places them",
          "[core][pickle]") {
  // A frame is closed once it holds 64 KiB, checked before each value: ["a"*40000, "b"*40000]
  // is one frame of 80014 bytes (its APPENDS and STOP included).
  const std::string a(40000, 'a'), b(40000, 'b');
  const std::string two = write_pickle(json::array({a, b}));
  CHECK(two.size() == 80025);
  CHECK(hex(two.substr(0, 11)) == hex(bytes({0x80, 4, 0x95}) + le(80014, 8)));
  // [[a, b], 1]: the 1 starts a second frame, which closes the outer list.
  const std::string nested = write_pickle(json::array({json::array({a, b}), 1}));
  REQUIRE(nested.size() == 80039);
  CHECK(hex(nested.substr(0, 11)) == hex(bytes({0x80, 4, 0x95}) + le(80015, 8)));
  CHECK(hex(nested.substr(80025)) ==
        hex(bytes({'e', 0x95}) + le(4, 8) + bytes({'K', 1, 'e', '.'})));
  // From 64 KiB, a string (its opcode too) is outside any frame: the frame before it is closed
  // and the next value opens a new one.
  const std::string x(70000, 'x');
  const std::string alone = write_pickle(x);
  CHECK(hex(alone.substr(0, 7)) == hex(bytes({0x80, 4, 'X'}) + le(70000, 4)));
  CHECK(alone.size() == 70008);
  const std::string between = write_pickle(json::array({"s", x, 7}));
  REQUIRE(between.size() == 70034);
  CHECK(hex(between.substr(0, 21)) == hex(bytes({0x80, 4, 0x95}) + le(5, 8) +
                                          bytes({']', '(', 0x8c, 1, 's', 'X'}) + le(70000, 4)));
  CHECK(hex(between.substr(70021)) == hex(bytes({0x95}) + le(4, 8) + bytes({'K', 7, 'e', '.'})));
  // Every frame's length is what follows it, up to the next FRAME, large string or the end:
  // the reader checks lengths; Python's own checks that no opcode straddles a frame's end.
  CHECK(read(between) == json::array({"s", x, 7}));
}

TEST_CASE("pickle: writing refuses too deep a value", "[core][pickle]") {
  // As deep as the reader walks: 512 nested lists are written and read back; 513 are refused.
  json deep = json::array();
  for (int level = 1; level < 512; ++level) deep = json::array({std::move(deep)});
  CHECK(round_trip(deep) == deep);
  const json deeper = json{{"k", deep}};
  try {
    (void)write_pickle(deeper);
    FAIL("a value 513 levels deep was written");
  } catch (const input_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("containers nest deeper than 512 levels"));
  }
  CHECK_THROWS_AS(write_pickle(json(json::value_t::discarded)), input_error);
}

TEST_CASE("pickle: Python loads what is written: the bytes CPython writes", "[core][pickle]") {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) {
    pinbench::testing::skip_case("no python3 on PATH");
    return;
  }
  json segments = json::array();
  for (int i = 0; i < 2500; ++i) {
    segments.push_back({{"address", (std::uint64_t{0xffff} << 48) + std::uint64_t(i) * 4096},
                        {"total_size", i * 512},
                        {"stream", -i},
                        {"segment_type", i % 2 == 0 ? "large" : "small"},
                        {"blocks", json::array({{{"size", i}, {"state", "active_allocated"}}})}});
  }
  const json value = {{"segments", segments},
                      {"int64_min", std::numeric_limits<std::int64_t>::min()},
                      {"uint64_max", std::numeric_limits<std::uint64_t>::max()},
                      {"floats", json::array({0.5, 1e300, -2.25})},
                      {"text", "\xc3\xa9\xe2\x80\xa6\xf0\x9f\x9a\x80"},
                      {"long", std::string(70000, 'x')},
                      {"bytes", json::binary({0x00, 0x01, 0xff})},
                      {"flags", json::array({true, false, nullptr})},
                      {"empty", json::array({json::object(), json::array()})}};
  const pinbench::testing::scratch_dir dir("pickle-python");
  const auto file = dir.path() / "snapshot.pickle";
  const std::string written = write_pickle(value);
  {
    std::ofstream out(file, std::ios::binary);
    out.write(written.data(), static_cast<std::streamsize>(written.size()));
  }
  // The second half re-pickles what Python loaded with its memo off (Pickler.fast) and expects
  // the very bytes written: dict order, batches, frames and encodings all CPython's.
  const std::string script = R"(import io, pickle, sys
data = open(sys.argv[1], "rb").read()
v = pickle.loads(data)
assert list(v) == sorted(v), list(v)
assert v["int64_min"] == -2**63 and type(v["int64_min"]) is int
assert v["uint64_max"] == 2**64 - 1
assert v["floats"] == [0.5, 1e300, -2.25]
assert v["text"] == "\u00e9\u2026\U0001f680", ascii(v["text"])
assert v["long"] == "x" * 70000
assert v["bytes"] == b"\x00\x01\xff"
assert v["flags"] == [True, False, None] and type(v["flags"][0]) is bool
assert v["empty"] == [{}, []]
s = v["segments"]
assert len(s) == 2500
assert s[2499] == {"address": (0xffff << 48) + 2499 * 4096, "blocks": [{"size": 2499,
    "state": "active_allocated"}], "segment_type": "small", "stream": -2499,
    "total_size": 2499 * 512}, s[2499]
f = io.BytesIO()
p = pickle.Pickler(f, 4)
p.fast = True
p.dump(v)
assert f.getvalue() == data, "loaded, but not the bytes CPython writes"
print("ok")
)";
  std::ofstream(dir.path() / "check.py") << script;
  const auto log = dir.path() / "log.txt";
  const std::string cmd = "python3 " + (dir.path() / "check.py").string() + " " + file.string() +
                          " >" + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  INFO(pinbench::testing::read_text(log));
  CHECK(status == 0);
  CHECK(pinbench::testing::read_text(log) == "ok\n");
}
