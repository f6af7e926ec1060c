// The pickle reader on hand-built bytes: each opcode family, the memo, each refused opcode and
// each kind of malformed input.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/pickle.hpp"

using pinbench::input_error;
using pinbench::pickle_document;
using pinbench::read_pickle;
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
std::string str(const std::string& s) { return bytes({0x8c}) + le(s.size(), 1) + s; }
std::string p4(const std::string& body) { return bytes({0x80, 4}) + body + "."; }
std::string p2(const std::string& body) { return bytes({0x80, 2}) + body + "."; }

json read(const std::string& pickle) { return read_pickle(pickle, "t.pickle"); }

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
  CHECK(read(p4("G" + bytes({0x3f, 0xf8, 0, 0, 0, 0, 0, 0}))) == json(1.5));  // big-endian
}

TEST_CASE("pickle: strings and bytes", "[core][pickle]") {
  CHECK(read(p4(str("alloc"))) == json("alloc"));
  CHECK(read(p4("X" + le(3, 4) + "abc")) == json("abc"));
  CHECK(read(p4(bytes({0x8d}) + le(2, 8) + "hi")) == json("hi"));  // BINUNICODE8
  CHECK(read(p2("U" + le(2, 1) + "py")) == json("py"));             // SHORT_BINSTRING
  CHECK(read(p2("T" + le(3, 4) + "two")) == json("two"));           // BINSTRING
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
  const json bad = read(p4(str("a\xff" "b\xed\xa0\x80")));
  CHECK(bad == json("a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
  CHECK_NOTHROW(bad.dump());
}

TEST_CASE("pickle: lists, tuples, sets and dicts", "[core][pickle]") {
  // EMPTY_LIST APPEND, MARK APPENDS
  CHECK(read(p4("]K" + le(1, 1) + "a(K" + le(2, 1) + "K" + le(3, 1) + "e")) == json({1, 2, 3}));
  CHECK(read(p2("(K" + le(1, 1) + "N" + "l")) == json::array({1, nullptr}));  // LIST
  CHECK(read(p4(")")) == json::array());                                      // EMPTY_TUPLE
  CHECK(read(p4("(K" + le(1, 1) + "K" + le(2, 1) + "t")) == json({1, 2}));   // TUPLE
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
      "]" "\x94"                                       // outer list, memo 0
      "}" "\x94"                                       // dict, memo 1
      "(" + str("k") + "K" + le(1, 1) + "u"            // filled after MEMOIZE
      + "a" + "h" + le(1, 1) + "a";                    // APPEND it, then BINGET 1 and APPEND
  CHECK(read(p4(filled_later)) == json::array({{{"k", 1}}, {{"k", 1}}}));
  // Mutated after the get, too: the list got first, appended to afterwards.
  const std::string mutated_after_get = "]q" + le(0, 1) + "]q" + le(1, 1) + "a" + "h" +
                                        le(1, 1) + "K" + le(9, 1) + "a" + "0";
  // stack: outer list [inner]; BINGET inner; append 9 to inner; POP it: outer = [[9]]
  CHECK(read(p4(mutated_after_get)) == json::array({json::array({9})}));
  // BINPUT/LONG_BINPUT and BINGET/LONG_BINGET
  CHECK(read(p4(str("s") + "r" + le(70000, 4) + "j" + le(70000, 4) + bytes({0x86}))) ==
        json({"s", "s"}));
  CHECK(read(p4(str("s") + "q" + le(3, 1) + "h" + le(3, 1) + bytes({0x86}))) == json({"s", "s"}));

  // Stored once: the document shares the value, whatever the number of references.
  const std::string twice = p4("}\x94(" + str("a") + "K" + le(1, 1) + "u" + "h" + le(0, 1) +
                               bytes({0x86}));
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
      {"N)" "\x81", "NEWOBJ (0x81)"},
      {"N)}" "\x92", "NEWOBJ_EX (0x92)"},
      {"P1\n", "PERSID (0x50)"},
      {"NQ", "BINPERSID (0x51)"},
      {"\x82\x01", "EXT1 (0x82)"},
      {"\x83\x01\x00", "EXT2 (0x83)"},
      {"\x84\x01\x00\x00\x00", "EXT4 (0x84)"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const std::string m = error_of(p4(c.body));
    CHECK_THAT(m, Catch::Contains("opcode " + c.name + " refused: a memory snapshot holds only "
                                  "plain data, and loading code from a file is never done"));
    CHECK_THAT(m, Catch::StartsWith("t.pickle: offset "));
  }
  // The offset is the opcode's own: GLOBAL right after PROTO is at 2.
  CHECK_THAT(error_of(p2("cposix\nsystem\n")), Catch::StartsWith("t.pickle: offset 2: opcode GLOBAL"));
  CHECK_THAT(error_of(p4("N" + str("x") + "\x93")),
             Catch::StartsWith("t.pickle: offset 6: opcode STACK_GLOBAL"));
  CHECK_THAT(error_of(p4("\xff")), Catch::Contains("offset 2: unknown opcode 0xff"));
  CHECK_THAT(error_of(p4("I1\n")), Catch::Contains("opcode INT (0x49) not supported"));
  CHECK_THAT(error_of(p4("\x97")), Catch::Contains("opcode NEXT_BUFFER (0x97) not supported"));
  CHECK_THAT(error_of(bytes({0x80, 6, 'N', '.'})), Catch::Contains("protocol 6 is not supported"));
}

TEST_CASE("pickle: malformed input is a one-line error naming the offset", "[core][pickle]") {
  CHECK_THAT(error_of(""), Catch::Contains("offset 0: the pickle ends without STOP"));
  CHECK_THAT(error_of(bytes({0x80, 4, 'N'})), Catch::Contains("offset 3: the pickle ends without STOP"));
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
  CHECK_THAT(error_of(p4("]\x94h" + le(0, 1) + "a")),
             Catch::Contains("(or one holds itself)"));
  // 40 levels of [x, x]: 2^40 values once copied; the document holds 40 lists.
  std::string bomb = "]";
  for (int level = 0; level < 40; ++level) {
    bomb += "q" + le(0, 1) + "0" + "h" + le(0, 1) + "h" + le(0, 1) + bytes({0x86});
  }
  CHECK_THAT(error_of(p4(bomb)), Catch::Contains("make more values than its size allows"));
  const auto doc = pickle_document::read(p4(bomb), "t.pickle");
  CHECK(doc.items(doc.root()).size() == 2);
}
