#include "synapse/tpc_kernels/body_schedule.h"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels::schedule {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

std::vector<std::string> split_args(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!trim(item).empty()) out.push_back(trim(item));
  return out;
}

struct Macro {
  std::vector<std::string> params;
  std::vector<std::string> body;
};

using Macros = std::map<std::string, Macro>;

// The .macro / .endm blocks of an assembly text (comments dropped; everything else ignored).
Macros parse_macros(const std::string& text) {
  Macros out;
  std::stringstream in(text);
  Macro* current = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (const size_t c = line.find("//"); c != std::string::npos) line.erase(c);
    line = trim(line);
    if (line.rfind(".macro ", 0) == 0) {
      std::string rest = trim(line.substr(7));
      const size_t space = rest.find_first_of(" \t");
      const std::string name = rest.substr(0, space);
      current = &out[name];
      *current = Macro{};
      if (space != std::string::npos) current->params = split_args(rest.substr(space));
    } else if (line == ".endm") {
      current = nullptr;
    } else if (current != nullptr && !line.empty()) {
      current->body.push_back(line);
    }
  }
  return out;
}

// ops.inc's macros, parsed once.
const Macros& ops_macros() {
  static const Macros macros = parse_macros(KernelLibrary::embedded_source("ops.inc").value_or(""));
  return macros;
}

bool expand_into(const Macros& macros, const std::string& name, const std::vector<std::string>& args,
                 std::vector<std::string>& out, int depth) {
  const auto it = macros.find(name);
  if (it == macros.end() || depth > 8) return false;
  static const std::regex param(R"(\\([A-Za-z_][A-Za-z0-9_]*))");
  for (const std::string& raw : it->second.body) {
    std::string line;
    std::sregex_iterator m(raw.begin(), raw.end(), param), end;
    size_t at = 0;
    for (; m != end; ++m) {
      line += raw.substr(at, static_cast<size_t>(m->position()) - at);
      const auto& params = it->second.params;
      const auto p = std::find(params.begin(), params.end(), (*m)[1].str());
      line += p == params.end() || static_cast<size_t>(p - params.begin()) >= args.size()
                  ? m->str()
                  : args[static_cast<size_t>(p - params.begin())];
      at = static_cast<size_t>(m->position() + m->length());
    }
    line += raw.substr(at);
    // Instructions sharing a bundle (a; b) come out one a line.
    std::stringstream parts(line);
    for (std::string part; std::getline(parts, part, ';');) {
      part = trim(part);
      if (part.empty()) continue;
      const size_t space = part.find_first_of(" \t");
      const std::string head = part.substr(0, space);
      if (macros.count(head)) {
        if (!expand_into(macros, head, split_args(space == std::string::npos ? "" : part.substr(space)), out, depth + 1))
          return false;
      } else {
        out.push_back(part);
      }
    }
  }
  return true;
}

// Registers an instruction reads and writes, and its latency class.
enum class Slot { Load, Spu, Vpu, Store };

struct Instr {
  std::string text;
  std::set<std::string> reads, writes;
  unsigned latency = 4;
  bool load = false, store = false;
  bool prefetch = false;   // a load with no destination: nothing waits on it
  bool vlm_load = false, vlm_store = false;   // ld_vlm / st_vlm: the VLM, ordered among themselves
  bool slm_load = false, slm_store = false;   // ld_slm / st_slm: the SLM, likewise
  Slot slot = Slot::Vpu;
  std::string immediate;   // the bundle immediate it uses (as written), or ""
};

bool is_register(const std::string& operand) {
  static const std::regex reg(R"((VP|SP|V|S|I)[0-9]+)");
  return std::regex_match(operand, reg);
}

Instr analyse(const std::string& text, unsigned load_latency) {
  static const std::regex reg(R"(\b(VP[0-9]+|SP[0-9]+|V[0-9]+|S[0-9]+|I[0-9]+)\b)");
  Instr in;
  in.text = text;
  std::string body = trim(text);
  const size_t space = body.find_first_of(" \t");
  const std::string mnemonic = body.substr(0, space);
  std::string operands = space == std::string::npos ? "" : body.substr(space);
  std::string predicate;
  if (const size_t at = operands.find('@'); at != std::string::npos) {
    predicate = operands.substr(at);
    operands.erase(at);
  }
  static const std::regex option(R"(\s+[A-Za-z_]+=\S+)");   // options (dim=0) are not operands
  std::vector<std::string> list = split_args(std::regex_replace(operands, option, ""));
  in.prefetch = mnemonic.rfind("prefetch", 0) == 0;
  in.load = mnemonic.rfind("ld_tnsr", 0) == 0 || in.prefetch;
  in.store = mnemonic.rfind("st_tnsr", 0) == 0;
  in.vlm_load = mnemonic.rfind("ld_vlm", 0) == 0;
  in.vlm_store = mnemonic.rfind("st_vlm", 0) == 0;
  in.slm_load = mnemonic.rfind("ld_slm", 0) == 0;
  in.slm_store = mnemonic.rfind("st_slm", 0) == 0;
  const bool scalar = mnemonic.rfind("imov", 0) == 0 || mnemonic.rfind("iadd", 0) == 0 ||
                      mnemonic.rfind("iget", 0) == 0 || (!list.empty() && (list[0][0] == 'S'));
  in.slot = in.load || in.vlm_load || in.slm_load   ? Slot::Load
            : in.store || in.vlm_store || in.slm_store ? Slot::Store
            : scalar                                   ? Slot::Spu
                                                       : Slot::Vpu;
  if (!in.load && !in.store)
    for (size_t k = in.vlm_store || in.slm_store ? 0 : 1; k < list.size(); ++k)
      if (!is_register(list[k])) in.immediate = list[k];
  const bool writes_first = !in.store && !in.vlm_store && !in.slm_store && mnemonic.rfind("prefetch", 0) != 0;
  for (size_t k = 0; k < list.size(); ++k)
    for (std::sregex_iterator m(list[k].begin(), list[k].end(), reg), end; m != end; ++m)
      (k == 0 && writes_first ? in.writes : in.reads).insert(m->str());
  for (std::sregex_iterator m(predicate.begin(), predicate.end(), reg), end; m != end; ++m) in.reads.insert(m->str());
  if (!predicate.empty()) in.reads.insert(in.writes.begin(), in.writes.end());   // lanes kept where false
  if (mnemonic.rfind("iadd_dim", 0) == 0 || mnemonic.rfind("imov_dim", 0) == 0)
    in.reads.insert(in.writes.begin(), in.writes.end());   // one coordinate of the register changes
  // The VPU's special-function latency covers its division too (the core's latency classes).
  const bool special = mnemonic.find("special") != std::string::npos || (in.slot == Slot::Vpu && mnemonic.rfind("div", 0) == 0);
  in.latency = in.prefetch           ? 0
               : in.load             ? load_latency
               : special             ? 8
               : in.slot == Slot::Spu ? 1
                                     : 4;   // VPU, and local memory loads
  return in;
}

}  // namespace

std::string rename_registers(const std::string& line, const std::map<std::string, std::string>& moved) {
  static const std::regex reg(R"(\b(VP[0-9]+|SP[0-9]+|V[0-9]+|S[0-9]+|I[0-9]+)\b)");
  std::string out;
  size_t at = 0;
  for (std::sregex_iterator m(line.begin(), line.end(), reg), end; m != end; ++m) {
    out += line.substr(at, static_cast<size_t>(m->position()) - at);
    const auto it = moved.find(m->str());
    out += it == moved.end() ? m->str() : it->second;
    at = static_cast<size_t>(m->position() + m->length());
  }
  return out + line.substr(at);
}

std::vector<std::string> expand_op(const std::string& name, const std::vector<std::string>& args, unsigned copy) {
  std::vector<std::string> out;
  if (copy >= kOpCopies || !expand_into(ops_macros(), name, args, out, 0)) return {};
  if (copy == 0) return out;
  static const std::map<std::string, std::string> scratch[kOpCopies - 1] = {
      {{"V4", "V24"}, {"V5", "V25"}, {"V6", "V26"}, {"V7", "V27"}, {"V8", "V28"}, {"VP1", "VP2"}},
      {{"V4", "V30"}, {"V5", "V31"}, {"V6", "V32"}, {"V7", "V33"}, {"V8", "V34"}, {"VP1", "VP3"}},
      {{"V4", "V35"}, {"V5", "V36"}, {"V6", "V37"}, {"V7", "V38"}, {"V8", "V39"}, {"VP1", "VP4"}}};
  for (std::string& line : out) line = rename_registers(line, scratch[copy - 1]);
  return out;
}

std::optional<std::vector<std::string>> expand_macro(const std::string& definitions, const std::string& call) {
  const std::string line = trim(call);
  const size_t space = line.find_first_of(" \t");
  std::vector<std::string> out;
  if (!expand_into(parse_macros(definitions), line.substr(0, space),
                   split_args(space == std::string::npos ? "" : line.substr(space)), out, 0))
    return std::nullopt;
  return out;
}

std::vector<std::string> list_schedule(const std::vector<std::string>& lines, const std::string& last,
                                       unsigned load_latency) {
  std::vector<std::string> all = lines;
  if (!last.empty()) all.push_back(last);
  const size_t n = all.size();
  std::vector<Instr> in;
  for (const std::string& l : all) in.push_back(analyse(l, load_latency));
  // Edges i -> j (i < j) with the cycles j issues after i at the earliest (0: the same bundle).
  std::vector<std::vector<std::pair<size_t, unsigned>>> after(n);
  std::vector<unsigned> preds(n, 0);
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < j; ++i) {
      int64_t wait = -1;
      for (const std::string& r : in[j].reads)
        if (in[i].writes.count(r)) wait = std::max<int64_t>(wait, in[i].latency);   // read after write
      for (const std::string& w : in[j].writes) {
        if (in[i].writes.count(w)) wait = std::max<int64_t>(wait, in[i].latency);   // the scoreboard's order
        if (in[i].reads.count(w)) wait = std::max<int64_t>(wait, 0);   // sources are read at issue
      }
      if (in[j].store && in[i].load && !in[i].prefetch) wait = std::max<int64_t>(wait, 1);   // in place: loaded first
      if (in[j].vlm_load && in[i].vlm_store) wait = std::max<int64_t>(wait, 1);   // the VLM in order
      if (in[j].vlm_store && in[i].vlm_load) wait = std::max<int64_t>(wait, 0);
      if (in[j].slm_load && in[i].slm_store) wait = std::max<int64_t>(wait, 1);   // the SLM in order
      if (in[j].slm_store && (in[i].slm_load || in[i].slm_store)) wait = std::max<int64_t>(wait, in[i].slm_store ? 1 : 0);
      if (!last.empty() && j + 1 == n) wait = std::max<int64_t>(wait, 0);   // the last bundle
      if (wait >= 0) {
        after[i].push_back({j, static_cast<unsigned>(wait)});
        ++preds[j];
      }
    }
  // Priority: the longest latency path from an instruction to the end.
  std::vector<unsigned> path(n, 0);
  for (size_t i = n; i-- > 0;) {
    path[i] = in[i].latency;
    for (const auto& [j, wait] : after[i]) path[i] = std::max(path[i], wait + path[j]);
  }
  std::vector<uint64_t> ready(n, 0);
  std::vector<bool> done(n, false);
  std::vector<std::string> bundles;
  size_t issued = 0;
  uint64_t cycle = 0;
  while (issued < n) {
    std::string bundle, immediate;
    bool slot_used[4] = {false, false, false, false};
    uint64_t soonest = UINT64_MAX;
    for (;;) {   // fill the bundle: one instruction per slot, one immediate
      int64_t best = -1;
      for (size_t i = 0; i < n; ++i) {
        if (done[i] || preds[i] != 0) continue;
        soonest = std::min(soonest, ready[i]);
        if (ready[i] > cycle || slot_used[static_cast<int>(in[i].slot)]) continue;
        if (!in[i].immediate.empty() && !immediate.empty() && in[i].immediate != immediate) continue;
        if (!last.empty() && i + 1 == n && issued + 1 != n) continue;
        if (best < 0 || path[i] > path[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
      }
      if (best < 0) break;
      const size_t b = static_cast<size_t>(best);
      done[b] = true;
      ++issued;
      slot_used[static_cast<int>(in[b].slot)] = true;
      if (!in[b].immediate.empty()) immediate = in[b].immediate;
      bundle += (bundle.empty() ? "" : "; ") + in[b].text;
      for (const auto& [j, wait] : after[b]) {
        ready[j] = std::max(ready[j], cycle + wait);
        --preds[j];
      }
    }
    if (bundle.empty()) {   // nothing ready: the core would stall until the soonest
      cycle = std::max(cycle + 1, soonest);
      continue;
    }
    bundles.push_back(bundle);
    ++cycle;
  }
  return bundles;
}

std::string loop_body(const std::vector<std::string>& bundles) {
  std::string text;
  for (size_t i = 0; i < bundles.size(); ++i) text += (i + 1 == bundles.size() ? "end_d0: " : "        ") + bundles[i] + "\n";
  return text;
}

}  // namespace hpusim::synapse::tpc_kernels::schedule
