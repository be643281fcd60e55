// cbor_writer.tests.cpp — the SDK's deterministic CBOR writer
// (sdk/include/umlos/cbor_writer.hpp), the one writer of kernel and modules,
// against the examples of RFC 8949 Appendix A that are in core deterministic
// encoding (§4.2.1), each written item by item.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <umlos/cbor_writer.hpp>
#include <umlos/sha256.hpp>
#include <vector>

using umlos::sdk::cbor::Writer;

namespace {

std::string hex(const std::vector<uint8_t>& b) { return umlos::sdk::hex(b.data(), b.size()); }

std::vector<uint8_t> bytes(std::initializer_list<uint8_t> b) { return b; }

struct Example {
  const char* diagnostic;  // as RFC 8949 Appendix A writes the item
  const char* hex;
  std::function<void(Writer&)> write;
};

void check(const std::vector<Example>& examples) {
  for (const Example& e : examples) {
    INFO("RFC 8949 Appendix A: " << e.diagnostic);
    Writer w;
    e.write(w);
    CHECK(hex(w.out) == e.hex);
  }
}

}  // namespace

TEST_CASE("The SDK's CBOR writer writes the RFC 8949 Appendix A integers", "[sdk][cbor]") {
  check({
      {"0", "00", [](Writer& w) { w.uint(0); }},
      {"1", "01", [](Writer& w) { w.uint(1); }},
      {"10", "0a", [](Writer& w) { w.uint(10); }},
      {"23", "17", [](Writer& w) { w.uint(23); }},
      {"24", "1818", [](Writer& w) { w.uint(24); }},
      {"25", "1819", [](Writer& w) { w.integer(25); }},
      {"100", "1864", [](Writer& w) { w.integer(100); }},
      {"1000", "1903e8", [](Writer& w) { w.uint(1000); }},
      {"1000000", "1a000f4240", [](Writer& w) { w.uint(1000000); }},
      {"1000000000000", "1b000000e8d4a51000", [](Writer& w) { w.integer(1000000000000); }},
      {"18446744073709551615", "1bffffffffffffffff", [](Writer& w) { w.uint(UINT64_MAX); }},
      {"18446744073709551616", "c249010000000000000000",
       [](Writer& w) {
         w.tag(2).bytes(bytes({1, 0, 0, 0, 0, 0, 0, 0, 0}).data(), 9);
       }},
      {"-18446744073709551616", "3bffffffffffffffff", [](Writer& w) { w.negative(UINT64_MAX); }},
      {"-18446744073709551617", "c349010000000000000000",
       [](Writer& w) {
         w.tag(3).bytes(bytes({1, 0, 0, 0, 0, 0, 0, 0, 0}).data(), 9);
       }},
      {"-1", "20", [](Writer& w) { w.integer(-1); }},
      {"-10", "29", [](Writer& w) { w.integer(-10); }},
      {"-100", "3863", [](Writer& w) { w.integer(-100); }},
      {"-1000", "3903e7", [](Writer& w) { w.integer(-1000); }},
      {"INT64_MIN", "3b7fffffffffffffff", [](Writer& w) { w.integer(INT64_MIN); }},  // §3.1: -1 - n
  });
}

TEST_CASE("The SDK's CBOR writer writes the RFC 8949 Appendix A floats in their shortest exact width", "[sdk][cbor]") {
  const double inf = std::numeric_limits<double>::infinity();
  check({
      {"0.0", "f90000", [](Writer& w) { w.floating(0.0); }},
      {"-0.0", "f98000", [](Writer& w) { w.floating(-0.0); }},
      {"1.0", "f93c00", [](Writer& w) { w.floating(1.0); }},
      {"1.1", "fb3ff199999999999a", [](Writer& w) { w.floating(1.1); }},
      {"1.5", "f93e00", [](Writer& w) { w.floating(1.5); }},
      {"65504.0", "f97bff", [](Writer& w) { w.floating(65504.0); }},
      {"100000.0", "fa47c35000", [](Writer& w) { w.floating(100000.0); }},
      {"3.4028234663852886e+38", "fa7f7fffff", [](Writer& w) { w.floating(3.4028234663852886e+38); }},
      {"1.0e+300", "fb7e37e43c8800759c", [](Writer& w) { w.floating(1.0e+300); }},
      {"5.960464477539063e-8", "f90001", [](Writer& w) { w.floating(5.960464477539063e-8); }},
      {"0.00006103515625", "f90400", [](Writer& w) { w.floating(0.00006103515625); }},
      {"-4.0", "f9c400", [](Writer& w) { w.floating(-4.0); }},
      {"-4.1", "fbc010666666666666", [](Writer& w) { w.floating(-4.1); }},
      {"Infinity", "f97c00", [inf](Writer& w) { w.floating(inf); }},
      {"NaN", "f97e00", [](Writer& w) { w.floating(std::nan("")); }},
      {"-Infinity", "f9fc00", [inf](Writer& w) { w.floating(-inf); }},
  });
  // Every NaN is the one NaN of deterministic encoding (§4.2.2).
  Writer w;
  w.floating(-std::nan("7"));
  CHECK(hex(w.out) == "f97e00");
}

TEST_CASE("The SDK's CBOR writer writes the RFC 8949 Appendix A simple values, tags and strings", "[sdk][cbor]") {
  check({
      {"false", "f4", [](Writer& w) { w.boolean(false); }},
      {"true", "f5", [](Writer& w) { w.boolean(true); }},
      {"null", "f6", [](Writer& w) { w.null(); }},
      {"undefined", "f7", [](Writer& w) { w.undefined(); }},
      {"0(\"2013-03-21T20:04:00Z\")", "c074323031332d30332d32315432303a30343a30305a",
       [](Writer& w) { w.tag(0).text("2013-03-21T20:04:00Z"); }},
      {"1(1363896240)", "c11a514b67b0", [](Writer& w) { w.tag(1).uint(1363896240); }},
      {"23(h'01020304')", "d74401020304",
       [](Writer& w) {
         w.tag(23).bytes(bytes({1, 2, 3, 4}).data(), 4);
       }},
      {"24(h'6449455446')", "d818456449455446",
       [](Writer& w) {
         w.tag(24).bytes(bytes({0x64, 0x49, 0x45, 0x54, 0x46}).data(), 5);
       }},
      {"32(\"http://www.example.com\")", "d82076687474703a2f2f7777772e6578616d706c652e636f6d",
       [](Writer& w) { w.tag(32).text("http://www.example.com"); }},
      {"h''", "40", [](Writer& w) { w.bytes(nullptr, 0); }},
      {"h'01020304'", "4401020304",
       [](Writer& w) {
         w.bytes(bytes({1, 2, 3, 4}).data(), 4);
       }},
      {"h'01020304' (head, then the bytes)", "4401020304",
       [](Writer& w) {
         w.bytes_head(4);
         w.out.insert(w.out.end(), {1, 2, 3, 4});
       }},
      {"\"\"", "60", [](Writer& w) { w.text(""); }},
      {"\"a\"", "6161", [](Writer& w) { w.text("a"); }},
      {"\"IETF\"", "6449455446", [](Writer& w) { w.text("IETF"); }},
      {"\"\\\"\\\\\"", "62225c", [](Writer& w) { w.text("\"\\"); }},
      {"\"\\u00fc\"", "62c3bc", [](Writer& w) { w.text("\xc3\xbc"); }},
      {"\"\\u6c34\"", "63e6b0b4", [](Writer& w) { w.text("\xe6\xb0\xb4"); }},
      {"\"\\ud800\\udd51\"", "64f0908591", [](Writer& w) { w.text("\xf0\x90\x85\x91"); }},
  });
}

TEST_CASE("The SDK's CBOR writer writes the RFC 8949 Appendix A arrays and maps", "[sdk][cbor]") {
  check({
      {"[]", "80", [](Writer& w) { w.array(0); }},
      {"[1, 2, 3]", "83010203", [](Writer& w) { w.array(3).uint(1).uint(2).uint(3); }},
      {"[1, [2, 3], [4, 5]]", "8301820203820405",
       [](Writer& w) { w.array(3).uint(1).array(2).uint(2).uint(3).array(2).uint(4).uint(5); }},
      {"[1, 2, ..., 25]", "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
       [](Writer& w) {
         w.array(25);
         for (uint64_t i = 1; i <= 25; ++i) w.uint(i);
       }},
      {"{}", "a0", [](Writer& w) { w.map(0); }},
      {"{1: 2, 3: 4}", "a201020304", [](Writer& w) { w.map(2).uint(1).uint(2).uint(3).uint(4); }},
      {"{\"a\": 1, \"b\": [2, 3]}", "a26161016162820203",
       [](Writer& w) { w.map(2).text("a").uint(1).text("b").array(2).uint(2).uint(3); }},
      {"[\"a\", {\"b\": \"c\"}]", "826161a161626163",
       [](Writer& w) { w.array(2).text("a").map(1).text("b").text("c"); }},
      {"{\"a\": \"A\", \"b\": \"B\", \"c\": \"C\", \"d\": \"D\", \"e\": \"E\"}",
       "a56161614161626142616361436164614461656145",
       [](Writer& w) {
         w.map(5);
         for (const char* k : {"a", "b", "c", "d", "e"}) w.text(k).text(std::string(1, static_cast<char>(k[0] - 32)));
       }},
  });
}

TEST_CASE("The SDK's CBOR writer heads switch width exactly at each boundary", "[sdk][cbor]") {
  check({
      {"23 / 24", "171818", [](Writer& w) { w.uint(23).uint(24); }},
      {"255 / 256", "18ff190100", [](Writer& w) { w.uint(255).uint(256); }},
      {"65535 / 65536", "19ffff1a00010000", [](Writer& w) { w.uint(65535).uint(65536); }},
      {"4294967295 / 4294967296", "1affffffff1b0000000100000000",
       [](Writer& w) { w.uint(4294967295u).uint(4294967296u); }},
      {"array of 24", "9818", [](Writer& w) { w.array(24); }},
      {"map of 256", "b90100", [](Writer& w) { w.map(256); }},
  });
}
