// The assembler. One pass over the source lines (includes and macro calls expanded in place),
// building one bundle per instruction line; label operands are fixed up at the end, where the
// shared-immediate rule is checked. Grammar and semantics: arch/tpc/ASSEMBLY.md.
#include "arch/tpc/asm/assembler.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "arch/tpc/asm/syntax.h"

namespace hpusim::tpc {
namespace {

namespace fs = std::filesystem;
using syntax::SwitchKind;

constexpr unsigned kMaxIncludeDepth = 32;
constexpr unsigned kMaxMacroDepth = 64;
constexpr unsigned kMaxExprDepth = 64;
constexpr size_t kMaxLines = 1'000'000;
constexpr size_t kMaxBundles = size_t{1} << 18;   // 8 MB of program

// An error in one line: reported at the line's location; assembly goes on with the next line.
struct LineError {
  unsigned column;
  std::string message;
};
// Assembly stops (too many errors, program too large).
struct StopAssembly {};

struct Token {
  enum Kind { Ident, Directive, Int, Float, String, Punct } kind = Punct;
  std::string text;        // as written; a String's contents; a Directive in lower case
  uint64_t int_value = 0;
  float float_value = 0;
  bool decimal = false;    // a non-zero decimal integer literal
  unsigned column = 0;     // 1-based
};

// The value of an expression: an integer, or a float literal (possibly negated).
struct Num {
  bool is_float = false;
  float f = 0;
  int64_t i = 0;
  bool decimal = false;    // a non-zero decimal literal took part (not allowed as a float operand)
};

// Where a line comes from. File names are shared by all lines of a file, and the include / macro
// call chain is a list of small shared nodes, spelled out only for a message: a huge expansion
// does not copy strings per bundle.
using SharedText = std::shared_ptr<const std::string>;
SharedText share(std::string text) { return std::make_shared<const std::string>(std::move(text)); }

struct Context {
  std::string what;                        // "in macro 'x' called at", "included from"
  SharedText file;
  unsigned line = 0;
  std::shared_ptr<const Context> parent;
};

struct Loc {
  SharedText file_text;
  unsigned line = 0;
  std::shared_ptr<const Context> context_chain;
  const std::string& file() const {
    static const std::string none;
    return file_text ? *file_text : none;
  }
  // "in macro 'x' called at f:3, included from g:1"
  std::string context() const {
    std::string out;
    for (const Context* c = context_chain.get(); c != nullptr; c = c->parent.get()) {
      out += (out.empty() ? "" : ", ") + c->what + " " + *c->file + ":" + std::to_string(c->line);
    }
    return out;
  }
};

std::shared_ptr<const Context> nest(const std::string& what, const Loc& at) {
  return std::make_shared<const Context>(Context{what, at.file_text, at.line, at.context_chain});
}

std::string where(const Loc& loc) { return loc.file() + ":" + std::to_string(loc.line); }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\v\f");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\v\f");
  return s.substr(b, e - b + 1);
}

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string show_char(char c) {
  if (std::isprint(static_cast<unsigned char>(c))) return std::string("'") + c + "'";
  char text[16];
  std::snprintf(text, sizeof text, "0x%02x", static_cast<unsigned char>(c));
  return text;
}

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

bool is_punct(const Token& t, const char* p) { return t.kind == Token::Punct && t.text == p; }

bool is_binary_op(const Token& t) {
  if (t.kind != Token::Punct) return false;
  static const std::set<std::string> ops = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"};
  return ops.count(t.text) != 0;
}

// Cuts a // or # comment (not inside a "string").
std::string strip_comment(const std::string& line) {
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      in_string = !in_string;
    } else if (!in_string && (c == '#' || (c == '/' && i + 1 < line.size() && line[i + 1] == '/'))) {
      return line.substr(0, i);
    }
  }
  return line;
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t lex_number(const std::string& s, size_t i, Token& t) {
  const size_t n = s.size(), start = i;
  auto bad = [&](size_t end) {
    while (end < n && is_ident_char(s[end])) ++end;
    throw LineError{t.column, "bad number '" + s.substr(start, end - start) + "'"};
  };
  auto too_large = [&]() { throw LineError{t.column, "number too large"}; };
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (s[i] == '0' && i + 1 < n && std::strchr("xXbB", s[i + 1]) != nullptr && s[i + 1] != '\0') {
    const unsigned base = (s[i + 1] == 'x' || s[i + 1] == 'X') ? 16 : 2;
    i += 2;
    uint64_t v = 0;
    size_t digits = 0;
    for (; i < n; ++i, ++digits) {
      const int d = digit_value(s[i]);
      if (d < 0 || d >= static_cast<int>(base)) break;
      if (v > (kMax - static_cast<uint64_t>(d)) / base) too_large();
      v = v * base + static_cast<uint64_t>(d);
    }
    if (digits == 0 || (i < n && is_ident_char(s[i]))) bad(i);
    t.kind = Token::Int;
    t.int_value = v;
    t.text = s.substr(start, i - start);
    return i;
  }
  size_t j = i;
  while (j < n && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  bool is_float = false;
  if (j < n && s[j] == '.') {
    is_float = true;
    ++j;
    while (j < n && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  }
  if (j < n && (s[j] == 'e' || s[j] == 'E')) {
    size_t k = j + 1;
    if (k < n && (s[k] == '+' || s[k] == '-')) ++k;
    if (k < n && std::isdigit(static_cast<unsigned char>(s[k]))) {
      is_float = true;
      j = k;
      while (j < n && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    }
  }
  const size_t literal_end = j;
  if (j < n && (s[j] == 'f' || s[j] == 'F')) {
    is_float = true;
    ++j;
  }
  if (j < n && is_ident_char(s[j])) bad(j);
  t.text = s.substr(start, j - start);
  if (is_float) {
    const std::string literal = s.substr(start, literal_end - start);
    const float f = std::strtof(literal.c_str(), nullptr);
    if (std::isinf(f)) throw LineError{t.column, "float literal '" + t.text + "' is out of range"};
    t.kind = Token::Float;
    t.float_value = f;
  } else {
    uint64_t v = 0;
    for (size_t k = start; k < j; ++k) {
      const auto d = static_cast<uint64_t>(s[k] - '0');
      if (v > (kMax - d) / 10) too_large();
      v = v * 10 + d;
    }
    t.kind = Token::Int;
    t.int_value = v;
    t.decimal = v != 0;
  }
  return j;
}

std::vector<Token> lex(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      ++i;
      continue;
    }
    Token t;
    t.column = static_cast<unsigned>(i + 1);
    if (c == '"') {
      const size_t close = s.find('"', i + 1);
      if (close == std::string::npos) throw LineError{t.column, "unterminated string"};
      t.kind = Token::String;
      t.text = s.substr(i + 1, close - i - 1);
      i = close + 1;
    } else if (is_ident_start(c)) {
      size_t j = i;
      while (j < n && is_ident_char(s[j])) ++j;
      t.kind = Token::Ident;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (c == '.' && i + 1 < n && is_ident_start(s[i + 1])) {
      size_t j = i + 1;
      while (j < n && is_word_char(s[j])) ++j;
      t.kind = Token::Directive;
      t.text = lower(s.substr(i, j - i));
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      i = lex_number(s, i, t);
    } else if ((c == '<' || c == '>') && i + 1 < n && s[i + 1] == c) {
      t.text = std::string(2, c);
      i += 2;
    } else if (c != '\0' && std::strchr(",;:@!=()+-*/%&|^~", c) != nullptr) {
      t.text = std::string(1, c);
      ++i;
    } else {
      throw LineError{t.column, "unexpected character " + show_char(c)};
    }
    out.push_back(std::move(t));
  }
  return out;
}

unsigned end_column(const std::vector<Token>& t, size_t pos) {
  if (pos < t.size()) return t[pos].column;
  if (t.empty()) return 1;
  return static_cast<unsigned>(t.back().column + t.back().text.size());
}

std::string join_tokens(const std::vector<Token>& t, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    if (i > begin && t[i].kind != Token::Punct && t[i - 1].kind != Token::Punct) out += ' ';
    out += t[i].text;
  }
  return out;
}

// What a statement's operand is before an op is chosen.
struct Arg {
  enum Kind { Reg, Name, Value, Bool } kind = Value;
  syntax::RegisterName reg{Operand::None, 0};
  std::string name;
  Num value;
  bool flag = false;
  unsigned column = 0;
  std::string text;
};

struct OptionArg {
  std::string name;        // lower case
  unsigned column = 0;
  bool is_word = false;    // name-valued (rnd=rz): word
  std::string word;
  Num value;
};

struct PredArg {
  bool present = false;
  bool invert = false;
  syntax::RegisterName reg{Operand::None, 0};
  unsigned column = 0;
};

struct Statement {
  std::vector<Arg> args;
  std::vector<OptionArg> options;
  PredArg pred;
};

struct Symbol {
  bool is_label = false;
  uint32_t index = 0;      // a label's bundle
  Num value;               // a constant's value
  std::string defined_at;
};

struct ImmUse {
  Slot slot = Slot::Load;
  bool is_label = false;
  std::string label;
  uint32_t value = 0;
  bool is_loop = false;
  unsigned column = 0;
  std::string text;
};

struct BundleInfo {
  Loc loc;
  std::vector<ImmUse> uses;
};

struct Macro {
  std::vector<std::string> params;
  std::vector<std::pair<std::string, Loc>> body;
  std::string defined_at;
};

std::string short_kind(Operand kind) {
  switch (kind) {
    case Operand::V: return "V";
    case Operand::S: return "S";
    case Operand::I: return "I";
    case Operand::SP: return "SP";
    case Operand::VP: return "VP";
    case Operand::SorImm: return "S|imm";
    case Operand::VorS: return "V|S|imm";
    case Operand::IorImm: return "I|imm";
    case Operand::Tensor: return "tensor";
    case Operand::Label: return "label";
    case Operand::None: break;
  }
  return "?";
}

std::string usage(const OpInfo& info) {
  std::string out = info.mnemonic;
  const SwitchKind sk = syntax::switch_kind(info.op);
  if (sk == SwitchKind::Cmp) out += ".<cmp>";
  if (sk == SwitchKind::Reduce) out += ".<add|max|min>";
  if (sk == SwitchKind::Special) out += ".<function>";
  if (info.takes_dtype) out += ".<type>";
  if (sk == SwitchKind::Convert) out += ".<target type>";
  const auto fields = syntax::text_operands(info);
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? ", " : " ") + short_kind(fields[i].kind);
  if (sk == SwitchKind::PredMov) out += "|true|false";
  if (sk == SwitchKind::Dim) out += " dim=N";
  return out;
}

std::optional<std::string> read_from_disk(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

class Assembler {
 public:
  explicit Assembler(const AssembleOptions& options) : options_(options) {}

  AssembleResult run(const std::string& source, const std::string& file_name) {
    try {
      for (size_t i = 0; i < options_.defines.size(); ++i) {
        const auto& [name, value] = options_.defines[i];
        handle_line(".equ " + name + " " + value, Loc{share("<command line>"), static_cast<unsigned>(i + 1), nullptr}, 0);
      }
      include_stack_.push_back(fs::path(file_name).lexically_normal().string());
      process_text(source, share(file_name), nullptr, 0);
      finalize();
    } catch (const StopAssembly&) {
    } catch (const std::exception& e) {
      result_.errors.push_back({file_name, 0, 0, std::string("internal error: ") + e.what()});
    }
    return std::move(result_);
  }

  std::optional<std::string> read(const std::string& path) const {
    return options_.read_file ? options_.read_file(path) : read_from_disk(path);
  }

 private:
  // ---- diagnostics ----
  void error(const Loc& loc, unsigned column, const std::string& message) {
    if (options_.max_errors != 0 && result_.errors.size() >= options_.max_errors) throw StopAssembly{};
    const std::string context = loc.context();
    result_.errors.push_back({loc.file(), loc.line, column, context.empty() ? message : message + " (" + context + ")"});
    if (options_.max_errors != 0 && result_.errors.size() >= options_.max_errors) {
      result_.errors.push_back({loc.file(), loc.line, 0, "too many errors; stopping"});
      throw StopAssembly{};
    }
  }

  // ---- lines ----
  void process_text(const std::string& text, const SharedText& file,
                    const std::shared_ptr<const Context>& context, unsigned include_depth) {
    const bool was_defining = defining_;
    size_t start = 0;
    unsigned line_no = 0;
    while (true) {
      size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      ++line_no;
      handle_line(text.substr(start, nl - start), Loc{file, line_no, context}, include_depth);
      if (nl >= text.size()) break;
      start = nl + 1;
    }
    if (defining_ && !was_defining) {
      defining_ = false;
      error(defining_loc_, 0, "missing .endm for macro '" + defining_name_ + "'");
    }
  }

  void handle_line(const std::string& line, const Loc& loc, unsigned include_depth) {
    if (++lines_ > kMaxLines) {
      error(loc, 0, "program too large (more than " + std::to_string(kMaxLines) + " source lines after expansion)");
      throw StopAssembly{};
    }
    const std::string code = strip_comment(line);
    if (defining_) {
      const std::string body = trim(code);
      const std::string word = lower(body.substr(0, body.find_first_of(" \t")));
      if (word == ".endm") {
        if (trim(body.substr(word.size())).size() != 0) {
          error(loc, 0, "unexpected text after .endm");
        }
        defining_ = false;
        macros_[defining_name_] = std::move(defining_macro_);
        defining_macro_ = Macro{};
      } else if (word == ".macro") {
        error(loc, 1 + static_cast<unsigned>(code.find_first_not_of(" \t")),
              "a .macro inside the definition of '" + defining_name_ + "' (missing .endm?)");
      } else {
        defining_macro_.body.emplace_back(code, loc);
      }
      return;
    }
    try {
      process_line(code, loc, include_depth);
    } catch (const LineError& e) {
      error(loc, e.column, e.message);
    }
  }

  void process_line(const std::string& code, const Loc& loc, unsigned include_depth) {
    const std::vector<Token> t = lex(code);
    size_t pos = 0;
    while (pos + 1 < t.size() && t[pos].kind == Token::Ident && is_punct(t[pos + 1], ":")) {
      define_label(t[pos], loc);
      pos += 2;
    }
    if (pos == t.size()) return;
    if (t[pos].kind == Token::Directive) {
      directive(t, pos, loc, include_depth);
    } else if (t[pos].kind == Token::Ident && macros_.count(t[pos].text)) {
      call_macro(t, pos, code, loc, include_depth);
    } else {
      assemble_bundle(t, pos, loc);
    }
  }

  void define_label(const Token& tok, const Loc& loc) {
    const std::string& name = tok.text;
    if (!valid_name(name, tok.column, "label")) return;
    auto it = symbols_.find(name);
    if (it != symbols_.end()) {
      error(loc, tok.column,
            (it->second.is_label ? "duplicate label '" + name + "'" : "'" + name + "' is already a constant") +
                " (defined at " + it->second.defined_at + ")");
      return;
    }
    Symbol symbol;
    symbol.is_label = true;
    symbol.index = static_cast<uint32_t>(result_.program.bundles.size());
    symbol.defined_at = where(loc);
    symbols_.emplace(name, symbol);
  }

  // Reports (as a LineError) why a name can't be a label / constant / macro; true when it can.
  bool valid_name(const std::string& name, unsigned column, const char* what) {
    if (syntax::valid_symbol_name(name)) return true;
    if (syntax::parse_register(name)) throw LineError{column, "'" + name + "' is a register name, not a " + what + " name"};
    if (name.find('.') != std::string::npos) throw LineError{column, std::string(what) + " names can't contain '.': '" + name + "'"};
    throw LineError{column, "'" + name + "' can't be a " + what + " name"};
  }

  // ---- directives ----
  void directive(const std::vector<Token>& t, size_t pos, const Loc& loc, unsigned include_depth) {
    const Token& d = t[pos];
    if (d.text == ".equ") {
      if (pos + 1 >= t.size() || t[pos + 1].kind != Token::Ident) {
        throw LineError{end_column(t, pos + 1), "expected a name after .equ"};
      }
      const Token& name = t[pos + 1];
      valid_name(name.text, name.column, "constant");
      size_t p = pos + 2;
      if (p < t.size() && is_punct(t[p], ",")) ++p;
      const Num value = evaluate(t, p, t.size());
      expect_end(t, p);
      auto it = symbols_.find(name.text);
      if (it != symbols_.end()) {
        throw LineError{name.column, "'" + name.text + "' is already defined (at " + it->second.defined_at + ")"};
      }
      Symbol symbol;
      symbol.value = value;
      symbol.defined_at = where(loc);
      symbols_.emplace(name.text, symbol);
    } else if (d.text == ".include") {
      if (pos + 1 >= t.size() || t[pos + 1].kind != Token::String) {
        throw LineError{end_column(t, pos + 1), "expected a \"file name\" after .include"};
      }
      expect_end(t, pos + 2);
      include(t[pos + 1], loc, include_depth);
    } else if (d.text == ".macro") {
      define_macro(t, pos, loc);
    } else if (d.text == ".endm") {
      throw LineError{d.column, ".endm without .macro"};
    } else if (d.text == ".bundle") {
      raw_bundle(t, pos + 1, loc);
    } else {
      throw LineError{d.column, "unknown directive '" + d.text + "' (directives: .equ, .include, .macro, .endm, .bundle)"};
    }
  }

  void expect_end(const std::vector<Token>& t, size_t pos) {
    if (pos < t.size()) throw LineError{t[pos].column, "unexpected '" + t[pos].text + "'"};
  }

  void include(const Token& path_token, const Loc& loc, unsigned include_depth) {
    const std::string& name = path_token.text;
    if (name.empty()) throw LineError{path_token.column, "empty include file name"};
    if (include_depth + 1 >= kMaxIncludeDepth) throw LineError{path_token.column, "includes nested too deeply"};
    std::vector<std::string> candidates;
    const fs::path path(name);
    if (path.is_absolute()) {
      candidates.push_back(path.lexically_normal().string());
    } else {
      candidates.push_back((fs::path(loc.file()).parent_path() / path).lexically_normal().string());
      for (const std::string& dir : options_.include_dirs) {
        candidates.push_back((fs::path(dir) / path).lexically_normal().string());
      }
    }
    for (const std::string& candidate : candidates) {
      for (const std::string& active : include_stack_) {
        if (active == candidate) throw LineError{path_token.column, "recursive include of '" + candidate + "'"};
      }
      auto text = read(candidate);
      if (!text) continue;
      include_stack_.push_back(candidate);
      process_text(*text, share(candidate), nest("included from", loc), include_depth + 1);
      include_stack_.pop_back();
      return;
    }
    std::string looked;
    for (size_t i = 0; i < candidates.size(); ++i) looked += (i ? ", " : "") + candidates[i];
    throw LineError{path_token.column, "include file '" + name + "' not found (looked for " + looked + ")"};
  }

  void define_macro(const std::vector<Token>& t, size_t pos, const Loc& loc) {
    if (pos + 1 >= t.size() || t[pos + 1].kind != Token::Ident) {
      throw LineError{end_column(t, pos + 1), "expected a macro name after .macro"};
    }
    const Token& name = t[pos + 1];
    valid_name(name.text, name.column, "macro");
    for (unsigned s = 0; s < kSlots; ++s) {
      if (op_info(static_cast<Slot>(s), lower(name.text))) {
        throw LineError{name.column, "'" + name.text + "' is a mnemonic; pick another macro name"};
      }
    }
    if (macros_.count(name.text)) {
      throw LineError{name.column, "macro '" + name.text + "' is already defined (at " + macros_[name.text].defined_at + ")"};
    }
    Macro macro;
    macro.defined_at = where(loc);
    for (size_t p = pos + 2; p < t.size(); ++p) {
      if (is_punct(t[p], ",")) continue;
      if (t[p].kind != Token::Ident || t[p].text.find('.') != std::string::npos) {
        throw LineError{t[p].column, "expected a parameter name, got '" + t[p].text + "'"};
      }
      for (const std::string& other : macro.params) {
        if (other == t[p].text) throw LineError{t[p].column, "duplicate macro parameter '" + t[p].text + "'"};
      }
      macro.params.push_back(t[p].text);
    }
    defining_ = true;
    defining_name_ = name.text;
    defining_macro_ = std::move(macro);
    defining_loc_ = loc;
  }

  static std::vector<std::string> split_args(const std::string& text) {
    std::vector<std::string> args;
    if (trim(text).empty()) return args;
    int depth = 0;
    bool in_string = false;
    std::string current;
    for (char c : text) {
      if (c == '"') in_string = !in_string;
      if (!in_string && c == '(') ++depth;
      if (!in_string && c == ')') --depth;
      if (!in_string && depth <= 0 && c == ',') {
        args.push_back(trim(current));
        current.clear();
      } else {
        current += c;
      }
    }
    args.push_back(trim(current));
    return args;
  }

  static std::string substitute(const std::string& line, const Macro& macro, const std::vector<std::string>& args,
                                unsigned expansion) {
    std::string out;
    for (size_t i = 0; i < line.size();) {
      if (line[i] != '\\') {
        out += line[i++];
        continue;
      }
      if (i + 1 < line.size() && line[i + 1] == '@') {
        out += std::to_string(expansion);
        i += 2;
        continue;
      }
      size_t j = i + 1;
      while (j < line.size() && is_word_char(line[j])) ++j;
      const std::string name = line.substr(i + 1, j - i - 1);
      if (name.empty()) throw LineError{static_cast<unsigned>(i + 1), "stray '\\' (\\name is a macro parameter, \\@ the call number)"};
      size_t k = 0;
      while (k < macro.params.size() && macro.params[k] != name) ++k;
      if (k == macro.params.size()) throw LineError{static_cast<unsigned>(i + 1), "unknown macro parameter '\\" + name + "'"};
      out += args[k];
      i = j;
    }
    return out;
  }

  void call_macro(const std::vector<Token>& t, size_t pos, const std::string& code, const Loc& loc,
                  unsigned include_depth) {
    const Token& name = t[pos];
    for (size_t p = pos + 1; p < t.size(); ++p) {
      if (is_punct(t[p], ";")) throw LineError{t[p].column, "a macro call must be alone on its line"};
    }
    if (macro_depth_ >= kMaxMacroDepth) throw LineError{name.column, "macro calls nested too deeply (a recursive macro?)"};
    const Macro macro = macros_.at(name.text);
    const std::vector<std::string> args = split_args(code.substr(name.column - 1 + name.text.size()));
    if (args.size() != macro.params.size()) {
      throw LineError{name.column, "macro '" + name.text + "' takes " + std::to_string(macro.params.size()) +
                                       " argument(s), got " + std::to_string(args.size())};
    }
    const unsigned expansion = expansions_++;
    const std::shared_ptr<const Context> context = nest("in macro '" + name.text + "' called at", loc);
    ++macro_depth_;
    for (const auto& [line, body_loc] : macro.body) {
      const Loc expanded_loc{body_loc.file_text, body_loc.line, context};
      std::string expanded;
      try {
        expanded = substitute(line, macro, args, expansion);
      } catch (const LineError& e) {
        error(expanded_loc, e.column, e.message);
        continue;
      }
      handle_line(expanded, expanded_loc, include_depth);
    }
    --macro_depth_;
  }

  void raw_bundle(const std::vector<Token>& t, size_t pos, const Loc& loc) {
    uint64_t words[5];
    for (unsigned i = 0; i < 5; ++i) {
      if (i > 0) {
        if (pos >= t.size() || !is_punct(t[pos], ",")) {
          throw LineError{end_column(t, pos), ".bundle takes 5 values: Load, SPU, VPU, Store slot and immediate"};
        }
        ++pos;
      }
      const unsigned column = end_column(t, pos);
      const Num v = evaluate(t, pos, t.size());
      if (v.is_float) throw LineError{column, ".bundle values are integers"};
      if (i < 4 && (v.i < 0 || v.i >= (int64_t{1} << 56))) throw LineError{column, "a slot is 56 bits: value out of range"};
      if (i == 4 && (v.i < std::numeric_limits<int32_t>::min() || v.i > std::numeric_limits<uint32_t>::max())) {
        throw LineError{column, "the immediate is 32 bits: value out of range"};
      }
      words[i] = static_cast<uint64_t>(v.i);
    }
    expect_end(t, pos);
    uint8_t bytes[kBundleBytes];
    for (unsigned s = 0; s < 4; ++s) {
      for (unsigned b = 0; b < 7; ++b) bytes[s * 7 + b] = static_cast<uint8_t>(words[s] >> (8 * b));
    }
    for (unsigned b = 0; b < 4; ++b) bytes[28 + b] = static_cast<uint8_t>(words[4] >> (8 * b));
    std::string why;
    auto bundle = decode(bytes, &why);
    if (!bundle) throw LineError{t[pos - 1].column, "bad .bundle: " + why};
    push_bundle(*bundle, BundleInfo{loc, {}}, loc);
  }

  void push_bundle(const Bundle& bundle, BundleInfo info, const Loc& loc) {
    if (result_.program.bundles.size() >= kMaxBundles) {
      error(loc, 0, "program too large (more than " + std::to_string(kMaxBundles) + " bundles)");
      throw StopAssembly{};
    }
    result_.program.bundles.push_back(bundle);
    if (info.uses.empty()) info.loc = Loc{};   // only finalize() reads it, for immediate uses
    infos_.push_back(std::move(info));
  }

  // ---- expressions ----
  Num evaluate(const std::vector<Token>& t, size_t& pos, size_t end) { return binary(t, pos, end, 0, 0); }

  static int precedence(const Token& t) {
    if (t.kind != Token::Punct) return -1;
    if (t.text == "|") return 0;
    if (t.text == "^") return 1;
    if (t.text == "&") return 2;
    if (t.text == "<<" || t.text == ">>") return 3;
    if (t.text == "+" || t.text == "-") return 4;
    if (t.text == "*" || t.text == "/" || t.text == "%") return 5;
    return -1;
  }

  Num binary(const std::vector<Token>& t, size_t& pos, size_t end, int min_precedence, unsigned depth) {
    Num lhs = unary(t, pos, end, depth);
    while (pos < end) {
      const int p = precedence(t[pos]);
      if (p < 0 || p < min_precedence) break;
      const Token& op = t[pos++];
      const Num rhs = binary(t, pos, end, p + 1, depth + 1);
      lhs = apply(op, lhs, rhs);
    }
    return lhs;
  }

  static Num apply(const Token& op, const Num& a, const Num& b) {
    if (a.is_float || b.is_float) {
      throw LineError{op.column, "a float literal can't be used in arithmetic (only alone, or negated)"};
    }
    const auto x = static_cast<uint64_t>(a.i), y = static_cast<uint64_t>(b.i);
    Num r;
    r.decimal = a.decimal || b.decimal;
    const std::string& o = op.text;
    if (o == "+") r.i = static_cast<int64_t>(x + y);
    else if (o == "-") r.i = static_cast<int64_t>(x - y);
    else if (o == "*") r.i = static_cast<int64_t>(x * y);
    else if (o == "&") r.i = static_cast<int64_t>(x & y);
    else if (o == "|") r.i = static_cast<int64_t>(x | y);
    else if (o == "^") r.i = static_cast<int64_t>(x ^ y);
    else if (o == "/" || o == "%") {
      if (b.i == 0) throw LineError{op.column, "division by zero"};
      if (b.i == -1) r.i = o == "/" ? static_cast<int64_t>(0 - x) : 0;
      else r.i = o == "/" ? a.i / b.i : a.i % b.i;
    } else {
      if (b.i < 0 || b.i > 63) throw LineError{op.column, "shift count " + std::to_string(b.i) + " is not in 0..63"};
      r.i = o == "<<" ? static_cast<int64_t>(x << b.i) : (a.i >> b.i);
    }
    return r;
  }

  Num unary(const std::vector<Token>& t, size_t& pos, size_t end, unsigned depth) {
    if (pos >= end) throw LineError{end_column(t, pos), "expected a value"};
    const Token& tok = t[pos];
    if (depth > kMaxExprDepth) throw LineError{tok.column, "expression nested too deeply"};
    if (is_punct(tok, "-") || is_punct(tok, "+") || is_punct(tok, "~")) {
      ++pos;
      Num v = unary(t, pos, end, depth + 1);
      if (tok.text == "+") return v;
      if (v.is_float) {
        if (tok.text == "~") throw LineError{tok.column, "'~' of a float"};
        v.f = -v.f;
        return v;
      }
      v.i = static_cast<int64_t>(tok.text == "-" ? 0 - static_cast<uint64_t>(v.i) : ~static_cast<uint64_t>(v.i));
      return v;
    }
    if (is_punct(tok, "(")) {
      ++pos;
      Num v = binary(t, pos, end, 0, depth + 1);
      if (pos >= end || !is_punct(t[pos], ")")) throw LineError{end_column(t, pos), "missing ')'"};
      ++pos;
      return v;
    }
    if (tok.kind == Token::Int) {
      ++pos;
      Num v;
      v.i = static_cast<int64_t>(tok.int_value);
      v.decimal = tok.decimal;
      return v;
    }
    if (tok.kind == Token::Float) {
      ++pos;
      Num v;
      v.is_float = true;
      v.f = tok.float_value;
      return v;
    }
    if (tok.kind == Token::Ident) {
      ++pos;
      auto it = symbols_.find(tok.text);
      if (it == symbols_.end()) {
        if (syntax::parse_register(tok.text)) throw LineError{tok.column, "register " + tok.text + " in an expression"};
        throw LineError{tok.column, "undefined constant '" + tok.text + "'"};
      }
      if (it->second.is_label) {
        throw LineError{tok.column, "'" + tok.text + "' is a label; only loop and jmp take labels, and not in expressions"};
      }
      return it->second.value;
    }
    throw LineError{tok.column, "expected a value, got '" + tok.text + "'"};
  }

  bool is_constant(const std::string& name) const {
    auto it = symbols_.find(name);
    return it != symbols_.end() && !it->second.is_label;
  }

  // ---- instructions ----
  void assemble_bundle(const std::vector<Token>& t, size_t pos, const Loc& loc) {
    Bundle bundle;
    BundleInfo info{loc, {}};
    std::array<unsigned, kSlots> slot_column{};
    try {
      size_t start = pos;
      bool any = false;
      while (true) {
        size_t end = start;
        while (end < t.size() && !is_punct(t[end], ";")) ++end;
        if (start == end) {
          if (end == t.size() && any) break;   // a trailing ';'
          throw LineError{end_column(t, start), "empty instruction"};
        }
        assemble_slot(t, start, end, bundle, slot_column, info);
        any = true;
        if (end == t.size()) break;
        start = end + 1;
      }
    } catch (const LineError&) {
      push_bundle(Bundle{}, BundleInfo{loc, {}}, loc);   // keeps the bundle numbers of later lines
      throw;
    }
    push_bundle(bundle, std::move(info), loc);
  }

  Statement parse_statement(const std::vector<Token>& t, size_t pos, size_t end) {
    Statement st;
    bool list_closed = false;
    while (pos < end) {
      const Token& tok = t[pos];
      if (is_punct(tok, "@")) {
        if (st.pred.present) throw LineError{tok.column, "more than one predicate"};
        st.pred = parse_predicate(t, pos, end);
        list_closed = !st.args.empty();
        continue;
      }
      if (tok.kind == Token::Ident && pos + 1 < end && is_punct(t[pos + 1], "=")) {
        st.options.push_back(parse_option(t, pos, end));
        list_closed = !st.args.empty();
        continue;
      }
      if (list_closed) throw LineError{tok.column, "unexpected '" + tok.text + "' (a missing ','?)"};
      st.args.push_back(parse_arg(t, pos, end));
      if (pos < end && is_punct(t[pos], ",")) {
        ++pos;
        if (pos >= end || is_punct(t[pos], "@") || (t[pos].kind == Token::Ident && pos + 1 < end && is_punct(t[pos + 1], "="))) {
          throw LineError{end_column(t, pos), "missing operand after ','"};
        }
      } else {
        list_closed = true;
      }
    }
    return st;
  }

  PredArg parse_predicate(const std::vector<Token>& t, size_t& pos, size_t end) {
    PredArg pred;
    pred.present = true;
    pred.column = t[pos].column;
    ++pos;
    if (pos < end && is_punct(t[pos], "!")) {
      pred.invert = true;
      ++pos;
    }
    if (pos >= end) throw LineError{end_column(t, pos), "expected a predicate register (SPn or VPn) after '@'"};
    auto reg = syntax::parse_register(t[pos].text);
    if (t[pos].kind != Token::Ident || !reg || (reg->kind != Operand::SP && reg->kind != Operand::VP)) {
      throw LineError{t[pos].column, "expected a predicate register (SPn or VPn), got '" + t[pos].text + "'"};
    }
    check_register(*reg, t[pos]);
    pred.reg = *reg;
    ++pos;
    return pred;
  }

  void check_register(const syntax::RegisterName& reg, const Token& tok) {
    const unsigned count = syntax::register_count(reg.kind);
    if (reg.number >= count) {
      throw LineError{tok.column, tok.text + " is out of range (" + syntax::register_prefix(reg.kind) + "0.." +
                                      syntax::register_prefix(reg.kind) + std::to_string(count - 1) + ")"};
    }
  }

  OptionArg parse_option(const std::vector<Token>& t, size_t& pos, size_t end) {
    OptionArg option;
    option.name = lower(t[pos].text);
    option.column = t[pos].column;
    pos += 2;
    if (pos >= end) throw LineError{end_column(t, pos), "missing value after '" + t[pos - 2].text + "='"};
    const Token& v = t[pos];
    if (v.kind == Token::Ident && !is_constant(v.text) && !(pos + 1 < end && is_binary_op(t[pos + 1]))) {
      option.is_word = true;
      option.word = lower(v.text);
      ++pos;
    } else {
      option.value = evaluate(t, pos, end);
    }
    return option;
  }

  Arg parse_arg(const std::vector<Token>& t, size_t& pos, size_t end) {
    const Token& tok = t[pos];
    const size_t start = pos;
    Arg arg;
    arg.column = tok.column;
    if (tok.kind == Token::Ident) {
      if (auto reg = syntax::parse_register(tok.text)) {
        check_register(*reg, tok);
        ++pos;
        if (pos < end && is_binary_op(t[pos])) throw LineError{t[pos].column, "a register can't be part of an expression"};
        arg.kind = Arg::Reg;
        arg.reg = *reg;
        arg.text = tok.text;
        return arg;
      }
      const std::string l = lower(tok.text);
      if (l == "true" || l == "false") {
        ++pos;
        arg.kind = Arg::Bool;
        arg.flag = l == "true";
        arg.text = tok.text;
        return arg;
      }
      if (!is_constant(tok.text) && !(pos + 1 < end && is_binary_op(t[pos + 1]))) {
        ++pos;
        arg.kind = Arg::Name;
        arg.name = tok.text;
        arg.text = tok.text;
        return arg;
      }
    }
    arg.kind = Arg::Value;
    arg.value = evaluate(t, pos, end);
    arg.text = join_tokens(t, start, pos);
    return arg;
  }

  static bool fits(Operand kind, const Arg& a, const OpInfo& info, const char* field) {
    switch (kind) {
      case Operand::V: case Operand::S: case Operand::I: case Operand::SP: case Operand::VP:
        if (a.kind == Arg::Reg) return a.reg.kind == kind;
        return a.kind == Arg::Bool && syntax::switch_kind(info.op) == SwitchKind::PredMov && std::strcmp(field, "src0") == 0;
      case Operand::SorImm:
        return (a.kind == Arg::Reg && a.reg.kind == Operand::S) || a.kind == Arg::Value || a.kind == Arg::Name;
      case Operand::VorS:
        return (a.kind == Arg::Reg && (a.reg.kind == Operand::V || a.reg.kind == Operand::S)) || a.kind == Arg::Value ||
               a.kind == Arg::Name;
      case Operand::IorImm:
        return (a.kind == Arg::Reg && a.reg.kind == Operand::I) || a.kind == Arg::Value || a.kind == Arg::Name;
      case Operand::Tensor: case Operand::Label:
        return a.kind == Arg::Value || a.kind == Arg::Name;
      case Operand::None:
        return false;
    }
    return false;
  }

  // The op among the candidates whose operand kinds match; else a LineError about the closest.
  const OpInfo* choose(const std::vector<const OpInfo*>& candidates, const Statement& st, const Token& mnemonic,
                       const std::string& base) {
    const OpInfo* best = nullptr;
    int best_score = -1;
    for (const OpInfo* info : candidates) {
      const auto fields = syntax::text_operands(*info);
      size_t leading = 0;
      while (leading < fields.size() && leading < st.args.size() &&
             fits(fields[leading].kind, st.args[leading], *info, fields[leading].name)) {
        ++leading;
      }
      if (leading == fields.size() && fields.size() == st.args.size()) return info;
      const int score = static_cast<int>(leading) * 2 + (fields.size() == st.args.size() ? 1 : 0);
      if (score > best_score) {
        best_score = score;
        best = info;
      }
    }
    std::string forms;
    for (size_t i = 0; i < candidates.size(); ++i) {
      forms += (i ? "; " : "") + usage(*candidates[i]);
      if (candidates.size() > 1) forms += std::string(" (") + syntax::slot_name(candidates[i]->slot) + ")";
    }
    const auto fields = syntax::text_operands(*best);
    if (fields.size() != st.args.size()) {
      const unsigned column = st.args.size() > fields.size() ? st.args[fields.size()].column : mnemonic.column;
      throw LineError{column, "'" + base + "' takes " + std::to_string(fields.size()) + " operand" +
                                  (fields.size() == 1 ? "" : "s") + ", got " + std::to_string(st.args.size()) +
                                  " (" + forms + ")"};
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      if (!fits(fields[i].kind, st.args[i], *best, fields[i].name)) {
        throw LineError{st.args[i].column, "operand " + std::to_string(i + 1) + " of '" + base + "' must be " +
                                               syntax::describe(fields[i].kind) + ", not '" + st.args[i].text + "' (" +
                                               forms + ")"};
      }
    }
    throw LineError{mnemonic.column, "no form of '" + base + "' takes these operands (" + forms + ")"};
  }

  // Why a name operand can't be a value here.
  LineError undefined(const Arg& a) {
    auto it = symbols_.find(a.name);
    if (it != symbols_.end() && it->second.is_label) {
      return LineError{a.column, "'" + a.name + "' is a label; only loop and jmp take labels"};
    }
    return LineError{a.column, "undefined constant '" + a.name + "'"};
  }

  uint32_t immediate(const Arg& a, syntax::ImmStyle style, DType dtype) {
    if (a.kind == Arg::Name) throw undefined(a);
    const Num& v = a.value;
    if (v.is_float) {
      if (style == syntax::ImmStyle::Signed || style == syntax::ImmStyle::Unsigned) {
        throw LineError{a.column, "float literal '" + a.text + "' for an " + dtype_name(dtype) + " operation"};
      }
      uint32_t bits;
      std::memcpy(&bits, &v.f, 4);
      return bits;
    }
    if (v.i < std::numeric_limits<int32_t>::min() || v.i > static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
      throw LineError{a.column, "immediate '" + a.text + "' = " + std::to_string(v.i) + " does not fit 32 bits"};
    }
    if (style == syntax::ImmStyle::Float && v.decimal) {
      throw LineError{a.column, "integer '" + a.text + "' for a " + std::string(dtype_name(dtype)) +
                                    " operation: write a float (e.g. " + std::to_string(v.i) +
                                    ".0) for the value, or hex for a bit pattern"};
    }
    return static_cast<uint32_t>(v.i);
  }

  int64_t int_option(const OptionArg& o, int64_t lo, int64_t hi) {
    if (o.is_word) {
      throw LineError{o.column, o.name + "= takes a number, not '" + o.word + "'"};
    }
    if (o.value.is_float || o.value.i < lo || o.value.i > hi) {
      throw LineError{o.column, o.name + "= must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi)};
    }
    return o.value.i;
  }

  void assemble_slot(const std::vector<Token>& t, size_t begin, size_t end, Bundle& bundle,
                     std::array<unsigned, kSlots>& slot_column, BundleInfo& bundle_info) {
    const Token& mn = t[begin];
    if (mn.kind != Token::Ident) {
      throw LineError{mn.column, "expected an instruction, got '" + (mn.kind == Token::String ? "\"" + mn.text + "\"" : mn.text) + "'"};
    }
    std::vector<std::string> parts;
    {
      const std::string text = lower(mn.text);
      size_t start = 0;
      while (true) {
        const size_t dot = text.find('.', start);
        parts.push_back(text.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (parts.back().empty()) throw LineError{mn.column, "bad mnemonic '" + mn.text + "'"};
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
    }
    const std::string& base = parts[0];
    if (base == "nop") {
      if (parts.size() > 1 || end > begin + 1) throw LineError{mn.column, "'nop' takes no operands"};
      return;
    }
    std::vector<const OpInfo*> candidates;
    for (unsigned s = 0; s < kSlots; ++s) {
      if (const OpInfo* info = op_info(static_cast<Slot>(s), base)) candidates.push_back(info);
    }
    if (candidates.empty()) {
      if (macros_.count(mn.text)) throw LineError{mn.column, "a macro call must be alone on its line"};
      throw LineError{mn.column, "unknown mnemonic '" + base + "'"};
    }
    const Statement st = parse_statement(t, begin + 1, end);
    const OpInfo& info = *choose(candidates, st, mn, base);
    const SwitchKind sk = syntax::switch_kind(info.op);
    const std::string slot_text = std::string(syntax::slot_name(info.slot)) + " slot";

    SlotInstr s;
    s.op = info.op;
    // Suffixes: data types and switch names.
    std::vector<DType> dtypes;
    std::optional<unsigned> named;
    const std::vector<std::string>* names = sk == SwitchKind::Cmp       ? &syntax::kCmpNames
                                            : sk == SwitchKind::Reduce  ? &syntax::kReduceNames
                                            : sk == SwitchKind::Special ? &syntax::kSpecialNames
                                                                        : nullptr;
    auto name_list = [](const std::vector<std::string>& list) {
      std::string out;
      for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + list[i];
      return out;
    };
    for (size_t i = 1; i < parts.size(); ++i) {
      if (auto dt = dtype_from_name(parts[i])) {
        dtypes.push_back(*dt);
        continue;
      }
      if (names != nullptr) {
        if (auto v = syntax::find_name(*names, parts[i])) {
          if (named) throw LineError{mn.column, "'" + base + "' has two kinds: '." + (*names)[*named] + "' and '." + parts[i] + "'"};
          named = v;
          continue;
        }
      }
      throw LineError{mn.column, "unknown suffix '." + parts[i] + "' on '" + base + "'" +
                                     (names ? " (" + name_list(*names) + ")" : std::string()) +
                                     (info.takes_dtype ? " (types: f32, bf16, i32, i16, i8, u32, u16, u8)" : "")};
    }
    if (sk == SwitchKind::Convert) {
      if (dtypes.size() != 2) {
        throw LineError{mn.column, "'convert' needs a source and a target type, e.g. convert.f32.bf16"};
      }
      s.dtype = dtypes[0];
      s.switches = static_cast<uint8_t>(dtypes[1]);
    } else if (info.takes_dtype) {
      if (dtypes.empty()) {
        throw LineError{mn.column, "'" + base + "' needs a data type, e.g. " + base + ".f32 or " + base + ".i32"};
      }
      if (dtypes.size() > 1) throw LineError{mn.column, "'" + base + "' takes one data type"};
      s.dtype = dtypes[0];
    } else if (!dtypes.empty()) {
      throw LineError{mn.column, "'" + base + "' (" + slot_text + ") takes no data type"};
    }
    if (names != nullptr) {
      if (!named) throw LineError{mn.column, "'" + base + "' needs a kind: " + base + ".<" + name_list(*names) + ">"};
      s.switches = static_cast<uint8_t>(*named);
    }

    // Options.
    std::set<std::string> seen;
    bool dim_given = false;
    int64_t step = 1;
    for (const OptionArg& o : st.options) {
      if (!seen.insert(o.name).second) throw LineError{o.column, "option '" + o.name + "' given twice"};
      if (sk == SwitchKind::Convert && o.name == "rnd") {
        auto r = o.is_word ? syntax::find_name(syntax::kRoundingNames, o.word) : std::nullopt;
        if (!r) throw LineError{o.column, "rnd= must be one of " + name_list(syntax::kRoundingNames)};
        s.switches |= static_cast<uint8_t>(*r << syntax::kConvertRoundShift);
      } else if (info.op == Op::VConvert && o.name == "part") {
        s.switches |= static_cast<uint8_t>(int_option(o, 0, 3) << syntax::kConvertPartShift);
      } else if (sk == SwitchKind::Dim && o.name == "dim") {
        s.switches = static_cast<uint8_t>(int_option(o, 0, kDims - 1));
        dim_given = true;
      } else if (sk == SwitchKind::LoopStep && o.name == "step") {
        step = int_option(o, -128, 127);
        if (step == 0) throw LineError{o.column, "a loop step can't be 0"};
      } else {
        const char* known = sk == SwitchKind::Convert ? (info.op == Op::VConvert ? " (options: rnd, part)" : " (options: rnd)")
                            : sk == SwitchKind::Dim   ? " (options: dim)"
                            : sk == SwitchKind::LoopStep ? " (options: step)"
                                                         : " (it has no options)";
        throw LineError{o.column, "'" + base + "' (" + slot_text + ") has no option '" + o.name + "'" + known};
      }
    }
    if (sk == SwitchKind::Dim && !dim_given) throw LineError{mn.column, "'" + base + "' needs dim=0..4"};
    if (sk == SwitchKind::LoopStep) s.switches = static_cast<uint8_t>(static_cast<int8_t>(step));

    // Operands.
    const auto fields = syntax::text_operands(info);
    const syntax::ImmStyle style = syntax::imm_style(info, s.dtype);
    std::optional<ImmUse> imm;
    for (size_t i = 0; i < fields.size(); ++i) {
      const Arg& a = st.args[i];
      const char* field = fields[i].name;
      switch (fields[i].kind) {
        case Operand::V: case Operand::S: case Operand::I: case Operand::SP: case Operand::VP:
          if (a.kind == Arg::Bool) {
            s.switches = static_cast<uint8_t>(syntax::kPredConst | (a.flag ? syntax::kPredConstTrue : 0));
          } else {
            syntax::set_field(s, field, static_cast<uint8_t>(a.reg.number));
          }
          break;
        case Operand::SorImm: case Operand::IorImm: case Operand::VorS:
          if (a.kind == Arg::Reg) {
            syntax::set_field(s, field, static_cast<uint8_t>(a.reg.number));
            if (fields[i].kind == Operand::VorS && a.reg.kind == Operand::S) s.switches |= kSwScalarSrc;
          } else {
            imm = ImmUse{info.slot, false, "", immediate(a, style, s.dtype), false, a.column, a.text};
          }
          break;
        case Operand::Tensor: {
          if (a.kind == Arg::Name) throw undefined(a);
          if (a.value.is_float || a.value.i < 0 || a.value.i >= static_cast<int64_t>(kMaxTensors)) {
            throw LineError{a.column, "tensor number '" + a.text + "' is not in 0.." + std::to_string(kMaxTensors - 1)};
          }
          syntax::set_field(s, field, static_cast<uint8_t>(a.value.i));
          break;
        }
        case Operand::Label:
          if (a.kind == Arg::Name) {
            imm = ImmUse{info.slot, true, a.name, 0, info.op == Op::Loop, a.column, a.text};
          } else {
            if (a.value.is_float || a.value.i < 0 || a.value.i > static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
              throw LineError{a.column, "bundle number '" + a.text + "' is not in 0..0xffffffff"};
            }
            imm = ImmUse{info.slot, false, "", static_cast<uint32_t>(a.value.i), info.op == Op::Loop, a.column, a.text};
          }
          break;
        case Operand::None:
          break;
      }
    }

    if (st.pred.present) {
      const bool vector = st.pred.reg.kind == Operand::VP;
      if (vector && (info.slot == Slot::Spu || info.slot == Slot::Store)) {
        throw LineError{st.pred.column, "a vector predicate can't predicate the " + slot_text +
                                            " (only the VPU and Load slots take VPn)"};
      }
      s.pred = static_cast<uint8_t>(st.pred.reg.number);
      s.pred_vector = vector;
      s.pred_invert = st.pred.invert;
    }

    const std::string problem = syntax::type_problem(info.slot, s);
    if (!problem.empty()) throw LineError{mn.column, problem};

    const unsigned index = static_cast<unsigned>(info.slot);
    if (slot_column[index] != 0) {
      throw LineError{mn.column, "two instructions for the " + slot_text + " in one bundle (the other is at column " +
                                     std::to_string(slot_column[index]) + ")"};
    }
    slot_column[index] = mn.column;
    if (imm) {
      s.use_imm = true;
      bundle_info.uses.push_back(*imm);
    }
    bundle.slot[index] = s;
  }

  // ---- the end ----
  void finalize() {
    auto& bundles = result_.program.bundles;
    for (size_t i = 0; i < bundles.size(); ++i) {
      const BundleInfo& info = infos_[i];
      std::optional<uint32_t> imm;
      const ImmUse* first = nullptr;
      for (const ImmUse& use : info.uses) {
        uint32_t value = use.value;
        if (use.is_label) {
          auto it = symbols_.find(use.label);
          if (it == symbols_.end()) {
            error(info.loc, use.column, "undefined label '" + use.label + "'");
            continue;
          }
          if (it->second.is_label) {
            value = it->second.index;
          } else {
            const Num& v = it->second.value;
            if (v.is_float || v.i < 0 || v.i > static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
              error(info.loc, use.column, "'" + use.label + "' is not a label or a bundle number");
              continue;
            }
            value = static_cast<uint32_t>(v.i);
          }
        }
        if (use.is_loop && value <= i) {
          error(info.loc, use.column, "a loop's body must end after the loop: '" + use.text + "' is bundle " +
                                          std::to_string(value) + ", the loop is bundle " + std::to_string(i));
        }
        if (!imm) {
          imm = value;
          first = &use;
        } else if (*imm != value) {
          error(info.loc, use.column,
                std::string("conflicting immediates in one bundle: the ") + syntax::slot_name(first->slot) +
                    " slot uses '" + first->text + "' (" + hex32(*imm) + "), the " + syntax::slot_name(use.slot) +
                    " slot '" + use.text + "' (" + hex32(value) + "); a bundle has one immediate");
        }
      }
      if (imm) bundles[i].imm = *imm;
    }
    for (const auto& [name, symbol] : symbols_) {
      if (symbol.is_label) result_.program.labels[name] = symbol.index;
    }
  }

  const AssembleOptions& options_;
  AssembleResult result_;
  std::map<std::string, Symbol> symbols_;
  std::map<std::string, Macro> macros_;
  std::vector<BundleInfo> infos_;
  std::vector<std::string> include_stack_;
  bool defining_ = false;
  std::string defining_name_;
  Macro defining_macro_;
  Loc defining_loc_;
  unsigned macro_depth_ = 0;
  unsigned expansions_ = 0;
  size_t lines_ = 0;
};

}  // namespace

std::string AsmDiagnostic::to_string() const {
  std::string out = file;
  if (line != 0) out += ":" + std::to_string(line);
  if (line != 0 && column != 0) out += ":" + std::to_string(column);
  return out + ": " + message;
}

std::string AssembleResult::error_text() const {
  std::string out;
  for (const AsmDiagnostic& d : errors) out += d.to_string() + "\n";
  return out;
}

AssembleResult assemble(const std::string& source, const std::string& file_name, const AssembleOptions& options) {
  return Assembler(options).run(source, file_name);
}

AssembleResult assemble_file(const std::string& path, const AssembleOptions& options) {
  Assembler assembler(options);
  auto text = assembler.read(path);
  if (!text) {
    AssembleResult result;
    result.errors.push_back({path, 0, 0, "cannot read the file"});
    return result;
  }
  return assembler.run(*text, path);
}

}  // namespace hpusim::tpc
