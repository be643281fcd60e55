// manifest.cpp — YAML manifests: typed conversion to CBOR, schema
// validation with FILE:LINE:COLUMN messages, canonical form, the hashes of
// spec 004 0.B, and `umlos manifest pin`. The schema is docs/manifest.md.
#include "manifest.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "error.hpp"
#include "fsutil.hpp"
#include "loader.hpp"
#include "model_ir_file.hpp"

namespace fs = std::filesystem;

namespace umlos {

const std::vector<std::string>& operator_roles() {
  static const std::vector<std::string> roles = {
      "bootstrap_op",     "termination_op", "quota_op",  "next_batch_op", "model_encode_op",
      "decode_op",        "forward_op",     "loss_op",   "validate_op",   "policy_op",
      "update_op",        "probe_op",       "switch_op", "augment_op",    "state_fingerprint_op",
      "functional_fp_op", "tape_op",        "log_op"};
  return roles;
}

std::string Manifest::operator_for(const std::string& role) const {
  const auto it = wiring.find(role);
  return it == wiring.end() || it->second.empty() ? std::string() : it->second.front().name;
}

std::string Manifest::where(const std::string& dotted_key) const {
  const auto it = marks.find(dotted_key);
  if (it == marks.end() || it->second.line == 0) return file;
  return file + ":" + std::to_string(it->second.line) + ":" + std::to_string(it->second.column);
}

const cbor::Value* lookup(const cbor::Value& root, std::string_view dotted) {
  const cbor::Value* node = &root;
  while (node != nullptr) {
    const size_t dot = dotted.find('.');
    node = node->find(dotted.substr(0, dot));
    if (dot == std::string_view::npos) return node;
    dotted.remove_prefix(dot + 1);
  }
  return nullptr;
}

namespace {

using cbor::Value;

const char* const kUnpinned = "unpinned";
const char* const kYamlStrTag = "tag:yaml.org,2002:str";

// Where a scalar that `pin` rewrites lies in the text.
struct ScalarSpan {
  size_t module_index = 0;  // modules[i], or datasets[i] when is_data_path
  bool is_path = false;     // else the sha256
  bool is_data_path = false;
  bool is_model_ir = false;  // model_ir.path / model_ir.sha256
  YAML::Mark mark;
  std::string value;  // the scalar as yaml-cpp read it
  bool quoted = false;
};

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

std::string item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string list_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// ------------------------------------------------ linear scanners
// Hand-written matchers for the scalar forms below: std::regex recurses once
// per repeated character, so a plain scalar of tens of thousands of digits
// or letters overflowed the stack. These take O(length) time and O(1) stack.

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }

// The index just past the run of characters satisfying `pred` from `i`.
template <typename Pred>
size_t skip(const std::string& s, size_t i, Pred pred) {
  while (i < s.size() && pred(s[i])) ++i;
  return i;
}

// [-+]?[0-9]+
bool is_decimal(const std::string& s) {
  const size_t start = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  return s.size() > start && skip(s, start, is_digit) == s.size();
}

// 0x[0-9a-fA-F]+
bool is_hexadecimal(const std::string& s) {
  return s.size() > 2 && s[0] == '0' && s[1] == 'x' && skip(s, 2, is_hex) == s.size();
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_float(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i < s.size() && s[i] == '.') {
    const size_t j = skip(s, i + 1, is_digit);
    if (j == i + 1) return false;
    i = j;
  } else {
    const size_t j = skip(s, i, is_digit);
    if (j == i) return false;
    i = j;
    if (i < s.size() && s[i] == '.') i = skip(s, i + 1, is_digit);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const size_t j = skip(s, i, is_digit);
    if (j == i) return false;
    i = j;
  }
  return i == s.size();
}

// PREFIX\[[0-9]+\]SUFFIX
bool is_indexed_key(const std::string& s, const std::string& prefix, const std::string& suffix) {
  if (s.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t open = prefix.size();
  if (open >= s.size() || s[open] != '[') return false;
  const size_t close = skip(s, open + 1, is_digit);
  if (close == open + 1 || close >= s.size() || s[close] != ']') return false;
  return s.compare(close + 1, std::string::npos, suffix) == 0;
}

// [A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+_v[0-9]+ : dot-separated
// words, at least two, the last one ending in _v<digits>.
bool is_operator_name(const std::string& s) {
  size_t i = 0, words = 0, last_start = 0;
  for (;;) {
    if (i >= s.size() || !is_alpha(s[i])) return false;
    last_start = i;
    i = skip(s, i, is_word);
    ++words;
    if (i == s.size()) break;
    if (s[i] != '.') return false;
    ++i;
  }
  if (words < 2) return false;
  // The trailing digits, then "_v", with at least one character before it.
  size_t d = s.size();
  while (d > last_start && is_digit(s[d - 1])) --d;
  return d < s.size() && d >= last_start + 3 && s[d - 1] == 'v' && s[d - 2] == '_';
}

// [A-Za-z0-9_][A-Za-z0-9_.-]*
bool is_value_name(const std::string& s) {
  if (s.empty() || s.size() > 256 || s.front() == '.' || s.back() == '.') return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

bool is_folder_name(const std::string& s) {
  return !s.empty() && is_word(s[0]) &&
         skip(s, 1, [](char c) { return is_word(c) || c == '.' || c == '-'; }) == s.size();
}

// [A-Za-z0-9_./+][A-Za-z0-9_./+-]*
bool is_plain_safe(const std::string& s) {
  auto safe = [](char c) { return is_word(c) || c == '.' || c == '/' || c == '+'; };
  return !s.empty() && safe(s[0]) && skip(s, 1, [&](char c) { return safe(c) || c == '-'; }) == s.size();
}

// One past the closing quote of the quoted scalar opening at text[pos], or
// npos when it is not closed (yaml-cpp 0.7 accepts an unterminated quoted
// scalar at the end of the input; we do not).
size_t quoted_end(const std::string& text, size_t pos) {
  const char open = text[pos];
  if (open == '"') {
    for (size_t i = pos + 1; i < text.size(); ++i) {
      if (text[i] == '\\')
        ++i;
      else if (text[i] == '"')
        return i + 1;
    }
  } else if (open == '\'') {
    for (size_t i = pos + 1; i < text.size(); ++i) {
      if (text[i] != '\'') continue;
      if (i + 1 < text.size() && text[i + 1] == '\'')
        ++i;
      else
        return i + 1;
    }
  }
  return std::string::npos;
}

// One key of a YAML map, with the nodes for messages and marks.
struct Entry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

// Counts the non-empty YAML documents of `text`, stopping at two (all a
// manifest needs to know). yaml-cpp's LoadAll never returns on some
// malformed streams (e.g. the four bytes `"x",`: every call yields the same
// document again), so the count is bounded instead of trusting the stream.
class DocumentProbe : public YAML::EventHandler {
 public:
  bool content = false;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { content = true; }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    content = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    content = true;
  }
  void OnMapEnd() override {}
};

size_t count_documents(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  size_t n = 0;
  while (n < 2) {
    DocumentProbe probe;
    if (!parser.HandleNextDocument(probe) || !probe.content) break;
    ++n;
  }
  return n;
}

size_t scalar_end(const std::string& text, const ScalarSpan& s);

class Parser {
 public:
  Parser(const std::string& file, bool allow_unpinned, Manifest& out, std::vector<ScalarSpan>* spans)
      : file_(file), allow_unpinned_(allow_unpinned), m_(out), spans_(spans) {}

  void parse(const std::string& text, uint64_t size_limit) {
    if (text.size() > size_limit)
      throw Failure(UMLOS_RESOURCE_EXHAUSTED, file_ + ": the document is " + std::to_string(text.size()) +
                                                  " bytes, above the limit of " + std::to_string(size_limit) +
                                                  " bytes");
    text_ = text;
    YAML::Node document;
    try {
      const size_t documents = count_documents(text);
      if (documents == 0)
        throw Failure(UMLOS_MANIFEST_INVALID,
                      file_ + ":1:1: key '': expected a manifest (a YAML map), found an empty file");
      if (documents > 1)
        throw Failure(UMLOS_MANIFEST_INVALID, file_ + ":1:1: key '': expected one YAML document, found more than one");
      document = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw Failure(UMLOS_MANIFEST_INVALID, file_ + ":" + std::to_string(e.mark.line + 1) + ":" +
                                                std::to_string(e.mark.column + 1) + ": malformed YAML: " + e.msg);
    }
    root(document);
  }

 private:
  // ---------------------------------------------------------- messages

  [[noreturn]] void fail_at(const YAML::Mark& mark, const std::string& path, const std::string& what) const {
    throw Failure(UMLOS_MANIFEST_INVALID, file_ + ":" + std::to_string(mark.line + 1) + ":" +
                                              std::to_string(mark.column + 1) + ": key '" + path + "': " + what);
  }

  // A node's position; an empty value (`key:` and nothing) is reported at
  // its key, because yaml-cpp places it at the next token.
  YAML::Mark mark_of(const Entry& e) const { return e.value.IsNull() ? e.key_node.Mark() : e.value.Mark(); }

  void record(const std::string& path, const YAML::Mark& mark) {
    m_.marks[path] = SourceMark{mark.line + 1, mark.column + 1};
  }

  static std::string found(const YAML::Node& node, const Value& typed) {
    switch (node.Type()) {
      case YAML::NodeType::Map:
        return "a map";
      case YAML::NodeType::Sequence:
        return "a list";
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return "null";
      case YAML::NodeType::Scalar:
        break;
    }
    switch (typed.kind()) {
      case Value::Kind::Text:
        return "'" + typed.as_text() + "'";
      case Value::Kind::UInt:
      case Value::Kind::NegInt:
        return "integer " + cbor::diagnostic(typed);
      case Value::Kind::Float:
        return "float " + cbor::diagnostic(typed);
      case Value::Kind::Bool:
        return std::string("boolean ") + (typed.as_bool() ? "true" : "false");
      default:
        return cbor::diagnostic(typed);
    }
  }

  // ----------------------------------------------- YAML -> typed CBOR

  // The typed value of a scalar (docs/manifest.md, "Types"): quoted and
  // block scalars are text; plain scalars are null, bool, integer, float,
  // or text, by the YAML 1.2 core schema.
  Value scalar(const YAML::Node& node, const std::string& path) const {
    if (node.IsNull()) return Value::null();
    const std::string& s = node.Scalar();
    const std::string& tag = node.Tag();
    if (tag == "!" && node.Mark().pos >= 0 && static_cast<size_t>(node.Mark().pos) < text_.size()) {
      const size_t pos = static_cast<size_t>(node.Mark().pos);
      if ((text_[pos] == '"' || text_[pos] == '\'') && quoted_end(text_, pos) == std::string::npos)
        throw Failure(UMLOS_MANIFEST_INVALID, file_ + ":" + std::to_string(node.Mark().line + 1) + ":" +
                                                  std::to_string(node.Mark().column + 1) +
                                                  ": malformed YAML: quoted string is not closed");
    }
    if (tag == "!" || tag == kYamlStrTag) return Value::text(s);
    if (tag != "?") fail_at(node.Mark(), path, "unsupported YAML tag '" + tag + "' (only !!str is allowed)");
    if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return Value::null();
    if (s == "true" || s == "True" || s == "TRUE") return Value::boolean(true);
    if (s == "false" || s == "False" || s == "FALSE") return Value::boolean(false);

    if (is_decimal(s)) {
      const bool negative = s[0] == '-';
      const size_t skip = (s[0] == '-' || s[0] == '+') ? 1 : 0;
      uint64_t magnitude = 0;
      const auto r = std::from_chars(s.data() + skip, s.data() + s.size(), magnitude);
      // -2^64 (magnitude 2^64) is the one CBOR integer whose magnitude does
      // not fit uint64: refused along with everything beyond.
      if (r.ec != std::errc()) fail_at(node.Mark(), path, "integer " + s + " is out of range (-2^64+1 .. 2^64-1)");
      if (!negative || magnitude == 0) return Value::uinteger(magnitude);
      return Value::neg_integer(magnitude - 1);
    }
    if (is_hexadecimal(s)) {
      uint64_t v = 0;
      const auto r = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
      if (r.ec != std::errc()) fail_at(node.Mark(), path, "integer " + s + " is out of range (at most 64 bits)");
      return Value::uinteger(v);
    }
    if (is_float(s)) {
      const size_t skip = s[0] == '+' ? 1 : 0;
      double d = 0.0;
      const auto r = std::from_chars(s.data() + skip, s.data() + s.size(), d);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size())
        fail_at(node.Mark(), path, "float " + s + " is out of the range of binary64");
      return Value::floating(d);
    }
    static const std::set<std::string> pos_inf = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"};
    static const std::set<std::string> neg_inf = {"-.inf", "-.Inf", "-.INF"};
    static const std::set<std::string> nan = {".nan", ".NaN", ".NAN"};
    if (pos_inf.count(s)) return Value::floating(std::numeric_limits<double>::infinity());
    if (neg_inf.count(s)) return Value::floating(-std::numeric_limits<double>::infinity());
    if (nan.count(s)) return Value::floating(std::numeric_limits<double>::quiet_NaN());
    return Value::text(s);
  }

  // The keys of a map, in file order, refusing duplicates and non-scalar keys.
  std::vector<Entry> entries(const YAML::Node& map, const std::string& path) const {
    std::vector<Entry> out;
    std::map<std::string, YAML::Mark> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar())
        fail_at(key.Mark(), path,
                std::string("expected text map keys, found ") +
                    (key.IsNull()  ? "an empty key"
                     : key.IsMap() ? "a map"
                                   : "a list") +
                    " as a key");
      const std::string k = key.Scalar();
      const auto [at, fresh] = seen.emplace(k, key.Mark());
      if (!fresh)
        fail_at(key.Mark(), join(path, k),
                "duplicate key (first at line " + std::to_string(at->second.line + 1) + ", column " +
                    std::to_string(at->second.column + 1) + ")");
      out.push_back(Entry{k, key, it->second});
    }
    return out;
  }

  // Any YAML node as CBOR, recording the mark of every key path below it.
  // Aliases are expanded here (yaml-cpp shares the aliased node), so nested
  // aliases ("billion laughs") would make the tree exponentially large: the
  // nodes converted are counted against kMaxYamlNodes.
  Value convert(const YAML::Node& node, const std::string& path) {
    if (++nodes_converted_ > kMaxYamlNodes)
      fail_at(node.Mark(), path,
              "the document expands to more than " + std::to_string(kMaxYamlNodes) +
                  " YAML nodes (are aliases nested?); the limit keeps expansion bounded");
    switch (node.Type()) {
      case YAML::NodeType::Map: {
        check_collection_tag(node, path, "tag:yaml.org,2002:map");
        Value map = Value::map();
        for (const Entry& e : entries(node, path)) {
          const std::string child = join(path, e.key);
          record(child, mark_of(e));
          map.as_map().emplace_back(Value::text(e.key), convert(e.value, child));
        }
        return map;
      }
      case YAML::NodeType::Sequence: {
        check_collection_tag(node, path, "tag:yaml.org,2002:seq");
        Value array = Value::array();
        size_t i = 0;
        for (const YAML::Node& element : node) {
          const std::string child = item(path, i++);
          record(child, element.Mark());
          array.as_array().push_back(convert(element, child));
        }
        return array;
      }
      default:
        // A digest is read from its text whatever it looks like (one of
        // only decimal digits would otherwise be an out-of-range integer).
        if (node.IsScalar() && is_digest_path(path)) return Value::text(node.Scalar());
        return scalar(node, path);
    }
  }

  static bool is_digest_path(const std::string& path) {
    return is_indexed_key(path, "modules", ".sha256") || is_indexed_key(path, "datasets", ".hash") ||
           path == "model_ir.sha256";
  }

  void check_collection_tag(const YAML::Node& node, const std::string& path, const std::string& standard) const {
    const std::string& tag = node.Tag();
    if (tag != "?" && !tag.empty() && tag != standard) fail_at(node.Mark(), path, "unsupported YAML tag '" + tag + "'");
  }

  // --------------------------------------------------- schema checks

  // A map whose keys are fixed by the schema. Returns key -> entry.
  std::map<std::string, Entry> fixed_map(const YAML::Node& node, const YAML::Mark& mark, const std::string& path,
                                         const std::vector<std::string>& allowed,
                                         const std::vector<std::string>& required) const {
    if (!node.IsMap()) fail_at(mark, path, "expected a map, found " + found(node, scalar_or_null(node, path)));
    std::map<std::string, Entry> out;
    for (Entry& e : entries(node, path)) {
      if (std::find(allowed.begin(), allowed.end(), e.key) == allowed.end())
        fail_at(e.key_node.Mark(), join(path, e.key), "unknown key (expected one of: " + list_words(allowed) + ")");
      out.emplace(e.key, std::move(e));
    }
    for (const std::string& r : required)
      if (!out.count(r)) fail_at(mark, join(path, r), "missing required key");
    return out;
  }

  Value scalar_or_null(const YAML::Node& node, const std::string& path) const {
    return node.IsScalar() || node.IsNull() ? scalar(node, path) : Value::null();
  }

  std::string text(const Entry& e, const std::string& path) const {
    const Value v = scalar_or_null(e.value, path);
    if (!e.value.IsScalar() || v.kind() != Value::Kind::Text)
      fail_at(mark_of(e), path, "expected a string, found " + found(e.value, v));
    if (v.as_text().empty()) fail_at(mark_of(e), path, "expected a non-empty string, found ''");
    return v.as_text();
  }

  uint64_t unsigned_integer(const Entry& e, const std::string& path) const {
    const Value v = scalar_or_null(e.value, path);
    if (!e.value.IsScalar() || v.kind() != Value::Kind::UInt)
      fail_at(mark_of(e), path, "expected an unsigned 64-bit integer, found " + found(e.value, v));
    return v.as_uint();
  }

  int64_t signed_integer(const Entry& e, const std::string& path) const {
    const Value v = scalar_or_null(e.value, path);
    if (!e.value.IsScalar() || (v.kind() != Value::Kind::UInt && v.kind() != Value::Kind::NegInt) || !v.fits_int64())
      fail_at(mark_of(e), path, "expected a 64-bit integer, found " + found(e.value, v));
    return v.as_int64();
  }

  void free_map(const Entry& e, const std::string& path) const {
    if (!e.value.IsMap())
      fail_at(mark_of(e), path, "expected a map, found " + found(e.value, scalar_or_null(e.value, path)));
  }

  // A digest as 64 hex digits. Read from the scalar's text whatever its
  // YAML type (a digest of decimal digits only would read as an integer).
  std::string hex_digest_text(const Entry& e, const std::string& path, bool allow_unpinned) const {
    if (!e.value.IsScalar())
      fail_at(mark_of(e), path, "expected 64 hexadecimal digits, found " + found(e.value, Value::null()));
    const std::string s = e.value.Scalar();
    if (s == kUnpinned && allow_unpinned) return s;
    Digest d;
    if (!digest_from_hex(s, d)) {
      std::string hint;
      if (s == kUnpinned) hint = " (run `umlos manifest pin` to write the module's digest)";
      fail_at(mark_of(e), path, "expected 64 hexadecimal digits, found '" + s + "'" + hint);
    }
    std::string lower = s;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower;
  }

  void span(size_t module_index, bool is_path, const Entry& e) {
    if (!spans_) return;
    ScalarSpan s;
    s.module_index = module_index;
    s.is_path = is_path;
    s.mark = e.value.Mark();
    s.value = e.value.Scalar();
    s.quoted = e.value.Tag() != "?";
    spans_->push_back(std::move(s));
  }

  // ---------------------------------------------------------- the root

  void root(const YAML::Node& doc) {
    static const std::vector<std::string> top_keys = {
        "umlos_manifest", "name",   "spec_version", "seed",      "modules", "driver", "tmmu",    "operators",
        "config",         "policy", "datasets",     "namespace", "budgets", "trace",  "model_ir"};
    if (!doc.IsMap())
      fail_at(doc.Mark(), "", "expected a manifest (a YAML map), found " + found(doc, scalar_or_null(doc, "")));
    // The whole tree, typed; the schema below checks it and adjusts the
    // canonical form (defaults in, module paths out).
    Value canonical = convert(doc, "");
    const auto top =
        fixed_map(doc, doc.Mark(), "", top_keys, {"umlos_manifest", "name", "modules", "driver", "operators"});

    {  // umlos_manifest: 1
      const Entry& e = top.at("umlos_manifest");
      const Value v = scalar_or_null(e.value, "umlos_manifest");
      if (!e.value.IsScalar() || v.kind() != Value::Kind::UInt || v.as_uint() != 1)
        fail_at(mark_of(e), "umlos_manifest", "expected the format version 1, found " + found(e.value, v));
    }
    m_.name = text(top.at("name"), "name");
    m_.spec_version = kDefaultSpecVersion;
    if (top.count("spec_version")) m_.spec_version = text(top.at("spec_version"), "spec_version");
    m_.seed = 0;
    if (top.count("seed")) m_.seed = unsigned_integer(top.at("seed"), "seed");

    Value canonical_modules = modules(top.at("modules"));
    driver(top.at("driver"));
    m_.tmmu_config = Value::map();
    if (top.count("tmmu")) tmmu(top.at("tmmu"));
    operators(top.at("operators"));

    m_.config = Value::map();
    if (top.count("config")) {
      free_map(top.at("config"), "config");
      m_.config = *canonical.find("config");
    }
    single_process_only(m_.config, "config");
    single_process_only(m_.driver_config, "driver.config");
    single_process_only(m_.tmmu_config, "tmmu.config");
    if (const Value* every = m_.config.find("checkpoint_every"); every && every->kind() != Value::Kind::UInt)
      throw Failure(UMLOS_MANIFEST_INVALID, m_.where("config.checkpoint_every") +
                                                ": key 'config.checkpoint_every': expected an unsigned integer "
                                                "(0 = no periodic checkpoints), found " +
                                                cbor::diagnostic(*every));
    m_.policy = Value::map();
    if (top.count("policy")) {
      policy(top.at("policy"));
      m_.policy = *canonical.find("policy");
    }
    if (top.count("datasets")) datasets(top.at("datasets"), canonical);
    if (top.count("model_ir")) model_ir(top.at("model_ir"), canonical);
    if (top.count("namespace")) name_space(top.at("namespace"));
    if (top.count("budgets")) {
      const Entry& e = top.at("budgets");
      const auto b = fixed_map(e.value, mark_of(e), "budgets", {"disk_bytes", "memory_bytes", "op_timeout_s"}, {});
      for (const auto& [k, be] : b) unsigned_integer(be, join("budgets", k));
    }
    if (top.count("trace")) {
      const Entry& e = top.at("trace");
      const auto t = fixed_map(e.value, mark_of(e), "trace", {"path"}, {});
      if (t.count("path")) text(t.at("path"), "trace.path");
    }

    // Canonical form: defaults filled in, modules identified by digest only.
    for (auto& [key, value] : canonical.as_map()) {
      const std::string& k = key.as_text();
      if (k == "modules") value = canonical_modules;
      if (k == "seed") value = Value::uinteger(m_.seed);
    }
    if (!canonical.find("spec_version")) canonical.set("spec_version", Value::text(m_.spec_version));
    if (!canonical.find("seed")) canonical.set("seed", Value::uinteger(m_.seed));
    m_.canonical = std::move(canonical);
    m_.canonical_bytes = cbor::encode(m_.canonical);
    m_.manifest_hash = sha256(m_.canonical_bytes);
    m_.policy_hash = sha256(cbor::encode(m_.policy));

    Value env_modules = Value::array();
    for (const ModuleEntry& mod : m_.modules)
      env_modules.as_array().push_back(mod.pinned ? Value::bytes(mod.sha256.data(), mod.sha256.size())
                                                  : Value::text(kUnpinned));
    Value env = Value::map();
    env.set("daemon_concurrency_max", Value::integer(kDaemonConcurrencyMax));
    env.set("world_size", Value::integer(1));
    env.set("modules", std::move(env_modules));
    Value env_driver = Value::map();
    env_driver.set("name", Value::text(m_.driver_name));
    env_driver.set("config", m_.driver_config);
    env.set("driver", std::move(env_driver));
    if (m_.tmmu_strategy.empty()) {
      env.set("tmmu", Value::null());
    } else {
      Value env_tmmu = Value::map();
      env_tmmu.set("strategy", Value::text(m_.tmmu_strategy));
      env_tmmu.set("config", m_.tmmu_config);
      env.set("tmmu", std::move(env_tmmu));
    }
    m_.env = std::move(env);
    m_.env_manifest_hash = sha256(cbor::encode(m_.env));

    Sha256 token;
    token.update(m_.spec_version);
    token.update(m_.policy_hash);
    token.update(m_.env_manifest_hash);
    token.update_u64_be(m_.seed);
    m_.replay_token = token.finish();
    m_.settings = read_run_settings(m_);
  }

  // modules: a non-empty list of {path, sha256}. Returns the canonical list.
  Value modules(const Entry& e) {
    if (!e.value.IsSequence())
      fail_at(mark_of(e), "modules",
              "expected a non-empty list of modules, found " + found(e.value, scalar_or_null(e.value, "modules")));
    if (e.value.size() == 0) fail_at(mark_of(e), "modules", "expected a non-empty list of modules, found []");
    Value canonical = Value::array();
    size_t i = 0;
    for (const YAML::Node& node : e.value) {
      const std::string path = item("modules", i);
      const auto fields = fixed_map(node, node.Mark(), path, {"path", "sha256"}, {"path", "sha256"});
      ModuleEntry mod;
      mod.mark = SourceMark{node.Mark().line + 1, node.Mark().column + 1};
      mod.path = text(fields.at("path"), join(path, "path"));
      mod.resolved_path =
          fs::path(mod.path).is_absolute() ? mod.path : (fs::path(m_.dir) / mod.path).lexically_normal().string();
      const std::string digest = hex_digest_text(fields.at("sha256"), join(path, "sha256"), allow_unpinned_);
      mod.pinned = digest != kUnpinned;
      if (mod.pinned) digest_from_hex(digest, mod.sha256);
      span(i, true, fields.at("path"));
      span(i, false, fields.at("sha256"));
      Value entry = Value::map();
      entry.set("sha256", mod.pinned ? Value::bytes(mod.sha256.data(), mod.sha256.size()) : Value::text(kUnpinned));
      canonical.as_array().push_back(std::move(entry));
      m_.modules.push_back(std::move(mod));
      ++i;
    }
    return canonical;
  }

  void driver(const Entry& e) {
    const auto d =
        fixed_map(e.value, mark_of(e), "driver", {"name", "config", "fallback", "fallback_config"}, {"name"});
    m_.driver_name = text(d.at("name"), "driver.name");
    m_.driver_config = Value::map();
    if (d.count("config")) {
      free_map(d.at("config"), "driver.config");
      m_.driver_config = convert(d.at("config").value, "driver.config");
    }
    m_.driver_fallback_config = Value::map();
    if (d.count("fallback")) {
      m_.driver_fallback = text(d.at("fallback"), "driver.fallback");
      if (m_.driver_fallback == m_.driver_name)
        fail_at(mark_of(d.at("fallback")), "driver.fallback",
                "expected another driver than driver.name, found '" + m_.driver_fallback + "'");
    }
    if (d.count("fallback_config")) {
      if (!d.count("fallback"))
        fail_at(mark_of(d.at("fallback_config")), "driver.fallback_config", "given without driver.fallback");
      free_map(d.at("fallback_config"), "driver.fallback_config");
      m_.driver_fallback_config = convert(d.at("fallback_config").value, "driver.fallback_config");
    }
  }

  void tmmu(const Entry& e) {
    const auto t = fixed_map(e.value, mark_of(e), "tmmu", {"strategy", "config", "values"}, {"strategy"});
    m_.tmmu_strategy = text(t.at("strategy"), "tmmu.strategy");
    if (t.count("values")) {
      m_.tmmu_values = text(t.at("values"), "tmmu.values");
      if (m_.tmmu_values != "arenas" && m_.tmmu_values != "buffers") {
        fail_at(mark_of(t.at("values")), "tmmu.values",
                "expected one of arenas, buffers, found '" + m_.tmmu_values + "'");
      }
    }
    if (t.count("config")) {
      free_map(t.at("config"), "tmmu.config");
      m_.tmmu_config = convert(t.at("config").value, "tmmu.config");
    }
  }

  void operators(const Entry& e) {
    if (!e.value.IsMap())
      fail_at(mark_of(e), "operators",
              "expected a map of role: operator name, found " + found(e.value, scalar_or_null(e.value, "operators")));
    const auto& roles = operator_roles();
    for (const Entry& op : entries(e.value, "operators")) {
      const std::string path = join("operators", op.key);
      if (std::find(roles.begin(), roles.end(), op.key) == roles.end())
        fail_at(op.key_node.Mark(), path, "unknown role (expected one of: " + list_words(roles) + ")");
      if (op.value.IsNull()) continue;  // the step is skipped
      std::vector<OperatorEntry> list;
      if (op.value.IsSequence()) {
        size_t i = 0;
        for (const YAML::Node& node : op.value) list.push_back(operator_entry(node, item(path, i++)));
        if (list.empty()) fail_at(mark_of(op), path, "expected at least one operator in the list, found none");
      } else {
        list.push_back(operator_entry(op.value, path));
      }
      m_.wiring[op.key] = std::move(list);
    }
  }

  // One operator of a role: a fully-qualified name, or a map
  // {op, inputs, outputs, config} (docs/manifest.md, "Wiring").
  OperatorEntry operator_entry(const YAML::Node& node, const std::string& path) {
    OperatorEntry oe;
    oe.path = path;
    record(path, node.Mark());
    if (node.IsMap()) {
      const auto m = fixed_map(node, node.Mark(), path, {"op", "inputs", "outputs", "config"}, {"op"});
      oe.name = operator_name(m.at("op").value, mark_of(m.at("op")), join(path, "op"));
      if (m.count("inputs")) oe.inputs = value_bindings(m.at("inputs"), join(path, "inputs"));
      if (m.count("outputs")) oe.outputs = value_bindings(m.at("outputs"), join(path, "outputs"));
      if (m.count("config")) {
        free_map(m.at("config"), join(path, "config"));
        oe.config = convert(m.at("config").value, join(path, "config"));
      }
      std::map<std::string, std::string> written;
      for (const auto& [decl, value] : oe.outputs) {
        if (auto [it, fresh] = written.emplace(value, decl); !fresh)
          fail_at(mark_of(m.at("outputs")), join(path, "outputs"),
                  "outputs '" + it->second + "' and '" + decl + "' are both bound to run value '" + value +
                      "' (duplicate output: one of them would be lost)");
      }
      return oe;
    }
    oe.name = operator_name(node, node.Mark(), path);
    return oe;
  }

  std::string operator_name(const YAML::Node& node, const YAML::Mark& mark, const std::string& path) const {
    const Value v = scalar_or_null(node, path);
    if (!node.IsScalar() || v.kind() != Value::Kind::Text)
      fail_at(mark, path,
              "expected a fully-qualified operator name, a map {op, inputs, outputs, config} or a list of them, "
              "found " +
                  found(node, v));
    if (!is_operator_name(v.as_text()))
      fail_at(mark, path,
              "expected a fully-qualified operator name like 'UML_OS.Model.Encode_v1' "
              "(Namespace.Name_vN), found '" +
                  v.as_text() + "'");
    return v.as_text();
  }

  // {declared name: run value name}: both value names (letters, digits,
  // '_' and '.'; no family wildcard).
  std::map<std::string, std::string> value_bindings(const Entry& e, const std::string& path) {
    free_map(e, path);
    std::map<std::string, std::string> out;
    for (const Entry& b : entries(e.value, path)) {
      const std::string at = join(path, b.key);
      if (!is_value_name(b.key))
        fail_at(b.key_node.Mark(), at,
                "expected a declared value name (letters, digits, '_' and '.'), found '" + b.key + "'");
      const std::string v = text(b, at);
      if (!is_value_name(v))
        fail_at(mark_of(b), at, "expected a run value name (letters, digits, '_' and '.'), found '" + v + "'");
      record(at, mark_of(b));
      out[b.key] = v;
    }
    return out;
  }

  void policy(const Entry& e) {
    const auto p = fixed_map(e.value, mark_of(e), "policy", {"rules"}, {});
    if (!p.count("rules")) return;
    const Entry& rules = p.at("rules");
    if (!rules.value.IsSequence())
      fail_at(mark_of(rules), "policy.rules",
              "expected a list of rules, found " + found(rules.value, scalar_or_null(rules.value, "policy.rules")));
    static const std::vector<std::string> actions = {"optimize", "probe", "switch", "augment"};
    size_t i = 0;
    for (const YAML::Node& node : rules.value) {
      const std::string path = item("policy.rules", i++);
      const auto r = fixed_map(node, node.Mark(), path, {"cond", "action", "priority"}, {"cond", "action", "priority"});
      text(r.at("cond"), join(path, "cond"));
      const std::string action = text(r.at("action"), join(path, "action"));
      if (std::find(actions.begin(), actions.end(), action) == actions.end())
        fail_at(mark_of(r.at("action")), join(path, "action"),
                "expected one of " + list_words(actions) + ", found '" + action + "'");
      signed_integer(r.at("priority"), join(path, "priority"));
    }
  }

  void datasets(const Entry& e, Value& canonical) {
    if (!e.value.IsSequence())
      fail_at(mark_of(e), "datasets",
              "expected a list of data sets, found " + found(e.value, scalar_or_null(e.value, "datasets")));
    Value* canonical_list = nullptr;
    for (auto& [key, value] : canonical.as_map())
      if (key.as_text() == "datasets") canonical_list = &value;
    size_t i = 0;
    for (const YAML::Node& node : e.value) {
      const std::string path = item("datasets", i);
      const auto d = fixed_map(node, node.Mark(), path, {"id", "version", "hash", "split", "path"},
                               {"id", "version", "hash", "split"});
      text(d.at("id"), join(path, "id"));
      text(d.at("version"), join(path, "version"));
      const std::string hash = hex_digest_text(d.at("hash"), join(path, "hash"), false);
      const std::string split = text(d.at("split"), join(path, "split"));
      if (split != "train" && split != "val")
        fail_at(mark_of(d.at("split")), join(path, "split"), "expected one of train, val, found '" + split + "'");
      if (d.count("path")) {
        text(d.at("path"), join(path, "path"));
        if (spans_) {  // `pin` rewrites a relative data path for the output's folder
          span(i, true, d.at("path"));
          spans_->back().is_data_path = true;
        }
      }
      // The hash is text in lowercase whatever its YAML type or case.
      for (auto& [key, value] : canonical_list->as_array()[i].as_map())
        if (key.as_text() == "hash") value = Value::text(hash);
      ++i;
    }
  }

  // model_ir: the model body as ModelIR (docs/model.md), inline {graph:
  // MAP} or a pinned file {path, sha256}. Either way the canonical form
  // holds {graph: MAP}, so the manifest hash covers the graph's content
  // and not where it was written.
  void model_ir(const Entry& e, Value& canonical) {
    const auto f = fixed_map(e.value, mark_of(e), "model_ir", {"graph", "path", "sha256"}, {});
    Value graph;
    if (f.count("graph")) {
      if (f.count("path") || f.count("sha256"))
        fail_at(mark_of(e), "model_ir", "expected either graph (inline) or path and sha256 (a file), found both");
      const Entry& g = f.at("graph");
      if (!g.value.IsMap())
        fail_at(mark_of(g), "model_ir.graph",
                "expected a ModelIR map, found " + found(g.value, scalar_or_null(g.value, "model_ir.graph")));
      graph = *canonical.find("model_ir")->find("graph");
    } else {
      if (!f.count("path") || !f.count("sha256"))
        fail_at(mark_of(e), f.count("path") ? "model_ir.sha256" : "model_ir.path",
                "missing required key (model_ir is {graph: MAP} or {path, sha256})");
      const std::string path = text(f.at("path"), "model_ir.path");
      const std::string digest = hex_digest_text(f.at("sha256"), "model_ir.sha256", allow_unpinned_);
      m_.model_ir_file = fs::path(path).is_absolute() ? path : (fs::path(m_.dir) / path).lexically_normal().string();
      if (spans_) {
        span(0, true, f.at("path"));
        spans_->back().is_model_ir = true;
        span(0, false, f.at("sha256"));
        spans_->back().is_model_ir = true;
      }
      const ModelIrFile file = read_model_ir_file(m_.model_ir_file, "model_ir.path", where_of(f.at("path")));
      // `umlos manifest pin` (allow_unpinned) rewrites the digest: a stale
      // one is what it is run to fix.
      if (!allow_unpinned_ && to_hex(file.sha256) != digest)
        throw Failure(UMLOS_DATA_HASH_MISMATCH, where_of(f.at("sha256")) + ": key 'model_ir.sha256': '" +
                                                    m_.model_ir_file + "' has SHA-256 " + to_hex(file.sha256) +
                                                    ", the manifest pins " + digest +
                                                    " (run `umlos manifest pin` after changing the model)");
      graph = file.graph;
      m_.model_ir_text = file.text;
      ScalarSpan at;
      at.mark = f.at("path").value.Mark();
      at.value = f.at("path").value.Scalar();
      at.quoted = f.at("path").value.Tag() != "?";
      if (const size_t end = scalar_end(text_, at); end != std::string::npos) {
        m_.model_ir_path_begin = static_cast<size_t>(at.mark.pos);
        m_.model_ir_path_end = end;
      }
    }
    Value entry = Value::map();
    entry.set("graph", graph);
    for (auto& [key, value] : canonical.as_map())
      if (key.as_text() == "model_ir") value = entry;
    m_.model_ir = std::move(entry);
  }

  std::string where_of(const Entry& e) const {
    const YAML::Mark mk = mark_of(e);
    return file_ + ":" + std::to_string(mk.line + 1) + ":" + std::to_string(mk.column + 1);
  }

  void name_space(const Entry& e) {
    // Each part becomes a folder under UML_OS_ROOT (spec 004 0.N): no
    // separators, no "." or "..", so a manifest cannot point outside it.
    const auto n = fixed_map(e.value, mark_of(e), "namespace", {"org", "unit", "project", "experiment"}, {});
    for (const auto& [k, ne] : n) {
      const std::string path = join("namespace", k);
      const std::string v = text(ne, path);
      if (!is_folder_name(v) || v == "." || v == "..")
        fail_at(mark_of(ne), path,
                "expected a folder name of letters, digits, '_', '.', '-' (not starting with '.' or '-'), "
                "found '" +
                    v + "'");
    }
  }

  // Refuses settings of distributed training (spec 004 0.R) in the
  // manifest: a job's world size and ranks come from its launch (umlos run
  // --nproc N, or RANK / WORLD_SIZE; docs/distributed.md), and the same
  // manifest runs on any world size with the same bits, so a world_size
  // other than 1, a rank other than 0 or a distributed_mode other than none
  // here would be silently ignored (or, read by a module, silently wrong).
  void single_process_only(const Value& map, const std::string& prefix) const {
    if (map.kind() != Value::Kind::Map) return;
    auto refuse = [&](const std::string& key, const std::string& expected, const Value& v) {
      const std::string path = join(prefix, key);
      throw Failure(UMLOS_MANIFEST_INVALID,
                    m_.where(path) + ": key '" + path +
                        "': the world size and rank come from the launch (umlos run --nproc N, or RANK and "
                        "WORLD_SIZE in the environment; docs/distributed.md), not from the manifest: expected " +
                        expected + " or no key, found " + cbor::diagnostic(v));
    };
    if (const Value* w = map.find("world_size"); w && !(w->kind() == Value::Kind::UInt && w->as_uint() == 1))
      refuse("world_size", "1", *w);
    if (const Value* r = map.find("rank"); r && !(r->kind() == Value::Kind::UInt && r->as_uint() == 0))
      refuse("rank", "0", *r);
    if (const Value* d = map.find("distributed_mode"); d && !(d->kind() == Value::Kind::Text && d->as_text() == "none"))
      refuse("distributed_mode", "none", *d);
  }

  const std::string& file_;
  size_t nodes_converted_ = 0;
  std::string text_;  // the source, for checks yaml-cpp does not make
  bool allow_unpinned_;
  Manifest& m_;
  std::vector<ScalarSpan>* spans_;
};

Manifest parse_impl(const std::string& yaml_text, const std::string& file, const std::string& base_dir,
                    bool allow_unpinned, std::vector<ScalarSpan>* spans, uint64_t size_limit = kManifestReadLimit) {
  Manifest m;
  m.file = file;
  m.dir = base_dir.empty() ? "." : base_dir;
  Parser(file, allow_unpinned, m, spans).parse(yaml_text, size_limit);
  m.text = yaml_text;
  return m;
}

std::string folder_of(const std::string& file) {
  const fs::path parent = fs::path(file).parent_path();
  return parent.empty() ? "." : parent.string();
}

// The end (one past) of the scalar that starts at `pos`, or npos when the
// text there is not the scalar yaml-cpp read (tags, anchors, aliases, block
// scalars, multi-line plain scalars: the pinner refuses to guess).
size_t scalar_end(const std::string& text, const ScalarSpan& s) {
  if (s.mark.pos < 0) return std::string::npos;  // yaml-cpp's null mark
  const size_t pos = static_cast<size_t>(s.mark.pos);
  if (pos >= text.size()) return std::string::npos;
  const char open = text[pos];
  if (s.quoted) return open == '"' || open == '\'' ? quoted_end(text, pos) : std::string::npos;
  if (text.compare(pos, s.value.size(), s.value) != 0) return std::string::npos;
  const size_t end = pos + s.value.size();
  if (end < text.size() && std::string(" \t\r\n,]}#").find(text[end]) == std::string::npos) return std::string::npos;
  return end;
}

// A scalar for the rewritten text, in the style the original used.
std::string render(const std::string& value, bool quoted, char original_quote) {
  if (!quoted && is_plain_safe(value)) return value;
  if (original_quote == '\'') {
    std::string out = "'";
    for (char c : value) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// How a manifest written to `out_dir` names `target`: relative to that
// folder, or absolute when no relative path leads there.
std::string path_from(const fs::path& target, const fs::path& out_dir) {
  const fs::path normal = target.lexically_normal();
  const fs::path relative = normal.lexically_relative(out_dir);
  return relative.empty() ? normal.string() : relative.string();
}

// One scalar of the manifest text that `pin` rewrites.
struct Replacement {
  size_t begin, end;
  std::string with;
  std::string key;
};

Replacement replace_scalar(const std::string& text, const std::string& in_file, const ScalarSpan& s,
                           const std::string& key, const std::string& value) {
  const size_t end = scalar_end(text, s);
  if (end == std::string::npos)
    throw Failure(UMLOS_MANIFEST_INVALID, in_file + ":" + std::to_string(s.mark.line + 1) + ":" +
                                              std::to_string(s.mark.column + 1) + ": key '" + key +
                                              "': cannot rewrite this value in place (write it as a plain or "
                                              "quoted scalar on one line, without tags, anchors or aliases)");
  const size_t begin = static_cast<size_t>(s.mark.pos);
  return {begin, end, render(value, s.quoted, text[begin]), key};
}

// model_ir.path relative to the output's folder; model_ir.sha256 the digest
// of the file's bytes now.
Replacement model_ir_replacement(const std::string& text, const std::string& in_file, const Manifest& m,
                                 const ScalarSpan& s, const fs::path& out_dir) {
  if (s.is_path) {
    const std::string value =
        fs::path(s.value).is_absolute() ? s.value : path_from(fs::absolute(m.model_ir_file), out_dir);
    return replace_scalar(text, in_file, s, "model_ir.path", value);
  }
  const ModelIrFile file = read_model_ir_file(m.model_ir_file, "model_ir.path", in_file);
  return replace_scalar(text, in_file, s, "model_ir.sha256", to_hex(file.sha256));
}

}  // namespace

Manifest parse_manifest(const std::string& yaml_text, const std::string& file, const std::string& base_dir,
                        bool allow_unpinned) {
  return parse_impl(yaml_text, file, base_dir, allow_unpinned, nullptr);
}

Manifest load_manifest(const std::string& file, bool allow_unpinned) {
  return parse_impl(read_text_file(file, kManifestReadLimit), file, folder_of(file), allow_unpinned, nullptr);
}

void pin_manifest(const std::string& in_file, const std::string& out_file) {
  const std::string text = read_text_file(in_file, kManifestReadLimit);
  std::vector<ScalarSpan> spans;
  const Manifest m = parse_impl(text, in_file, folder_of(in_file), true, &spans);

  const fs::path out_dir = fs::absolute(folder_of(out_file)).lexically_normal();
  std::vector<Replacement> replacements;
  for (const ScalarSpan& s : spans) {
    if (s.is_model_ir) {
      replacements.push_back(model_ir_replacement(text, in_file, m, s, out_dir));
      continue;
    }
    if (s.is_data_path) {
      // A data path, like a module path, is relative to the manifest's
      // folder: rewritten so that the copy names the same file.
      if (fs::path(s.value).is_absolute()) continue;
      replacements.push_back(replace_scalar(text, in_file, s, item("datasets", s.module_index) + ".path",
                                            path_from(fs::absolute(folder_of(in_file)) / s.value, out_dir)));
      continue;
    }
    const ModuleEntry& mod = m.modules[s.module_index];
    const std::string key = item("modules", s.module_index) + (s.is_path ? ".path" : ".sha256");
    const std::string at = in_file + ":" + std::to_string(s.mark.line + 1) + ":" + std::to_string(s.mark.column + 1) +
                           ": key '" + key + "': ";
    std::string value;
    if (s.is_path) {
      value = fs::path(mod.path).is_absolute() ? mod.path : path_from(fs::absolute(mod.resolved_path), out_dir);
    } else {
      // The loader's reader: the digest of exactly the bytes a load would
      // map (a FIFO or device is refused, not waited on).
      try {
        value = to_hex(hash_module_file(mod.resolved_path));
      } catch (const Failure& f) {
        throw Failure(f.code(), at + "module file '" + mod.resolved_path + "' cannot be pinned (" + f.what() + ")");
      }
    }
    replacements.push_back(replace_scalar(text, in_file, s, key, value));
  }
  std::sort(replacements.begin(), replacements.end(),
            [](const Replacement& a, const Replacement& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < replacements.size(); ++i)
    if (replacements[i].begin < replacements[i - 1].end)
      throw Failure(UMLOS_MANIFEST_INVALID, in_file + ": key '" + replacements[i].key +
                                                "': shares its text with key '" + replacements[i - 1].key +
                                                "' (a YAML alias?); write each value out");

  std::string out;
  size_t copied = 0;
  for (const Replacement& r : replacements) {
    out.append(text, copied, r.begin - copied);
    out += r.with;
    copied = r.end;
  }
  out.append(text, copied, std::string::npos);

  // What we write must load, pinned, from where it will lie, and name the
  // same module files.
  const Manifest pinned = parse_impl(out, out_file, folder_of(out_file), false, nullptr);
  for (size_t i = 0; i < m.modules.size(); ++i) {
    const fs::path before = fs::absolute(m.modules[i].resolved_path).lexically_normal();
    const fs::path after = fs::absolute(pinned.modules[i].resolved_path).lexically_normal();
    if (before != after)
      throw Failure(UMLOS_INTERNAL, out_file + ": key '" + item("modules", i) + ".path': rewritten path '" +
                                        pinned.modules[i].path + "' names '" + after.string() + "', not '" +
                                        before.string() + "'");
  }

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Failure(UMLOS_IO_ERROR, "cannot create folder '" + out_dir.string() + "': " + ec.message());
  write_file_atomic(out_file, out);
}

std::string run_folder_manifest_text(const Manifest& m, const std::string& ir_copy) {
  if (m.model_ir_file.empty() || m.model_ir_path_begin == m.model_ir_path_end) return m.text;
  std::string out = m.text;
  out.replace(m.model_ir_path_begin, m.model_ir_path_end - m.model_ir_path_begin, render(ir_copy, true, '"'));
  return out;
}

cbor::Value parse_yaml_value(const std::string& yaml_text, const std::string& label) {
  if (yaml_text.size() > kYamlValueSizeLimit)
    throw Failure(UMLOS_RESOURCE_EXHAUSTED, label + ": the document is " + std::to_string(yaml_text.size()) +
                                                " bytes, above the limit of " + std::to_string(kYamlValueSizeLimit) +
                                                " bytes");
  // Embedded as the single config value of a minimal manifest, so one reader
  // (and one YAML typing) serves manifests, IR files and test vectors.
  std::string text =
      "umlos_manifest: 1\nname: value\nmodules:\n  - {path: x, sha256: unpinned}\n"
      "driver: {name: x}\noperators: {}\nconfig:\n  value:\n";
  size_t start = 0;
  while (start <= yaml_text.size()) {
    size_t end = yaml_text.find('\n', start);
    if (end == std::string::npos) end = yaml_text.size();
    text += "    " + yaml_text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  Manifest m = parse_impl(text, label, ".", true, nullptr, std::numeric_limits<uint64_t>::max());
  const cbor::Value* v = m.config.find("value");
  if (!v || v->is_null()) throw Failure(UMLOS_MANIFEST_INVALID, label + ": the document is empty");
  return *v;
}

}  // namespace umlos
