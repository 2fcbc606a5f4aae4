#include "arch/packets/packets.h"

#include <cinttypes>
#include <cstdio>
#include <stdexcept>
#include <type_traits>

#include "arch/hex.h"

namespace hpusim::qman {
namespace {

// --- little-endian byte access --------------------------------------------------------------

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// --- field helpers ---------------------------------------------------------------------------

void check_width(uint64_t value, unsigned bits, const char* packet, const char* field) {
  if (bits < 64 && (value >> bits) != 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s: field %s = 0x%" PRIx64 " does not fit in %u bits", packet, field,
                  value, bits);
    throw std::invalid_argument(buf);
  }
}

uint32_t bit(bool b, unsigned pos) { return b ? (1u << pos) : 0u; }
bool test(uint32_t word, unsigned pos) { return ((word >> pos) & 1u) != 0; }

uint32_t ctl_common(Opcode op, const Barriers& b) {
  return (static_cast<uint32_t>(op) << kCtlOpcodeShift) | (b.eb ? kCtlEngineBarrier : 0u) |
         (b.rb ? kCtlRegisterBarrier : 0u) | (b.mb ? kCtlMessageBarrier : 0u);
}

Barriers barriers_of(uint32_t ctl) {
  return Barriers{(ctl & kCtlEngineBarrier) != 0, (ctl & kCtlRegisterBarrier) != 0,
                  (ctl & kCtlMessageBarrier) != 0};
}

uint8_t pred_of(uint32_t ctl) { return static_cast<uint8_t>(ctl & kCtlPredMask); }

// Shared by MSG_LONG and MSG_PROT (identical layouts).
template <typename T>
void encode_long_message(const T& p, Opcode op, const char* name, std::vector<uint8_t>& out) {
  check_width(p.op, 2, name, "op");
  check_width(p.pred, 5, name, "pred");
  uint32_t ctl = ctl_common(op, p.barriers) | p.pred | bit(p.weakly_ordered, 16) | bit(p.no_snoop, 17) |
                 (static_cast<uint32_t>(p.op) << 20);
  put_u32(out, p.value);
  put_u32(out, ctl);
  put_u64(out, p.addr);
}

template <typename T>
T decode_long_message(const uint8_t* d) {
  T p;
  uint32_t ctl = get_u32(d + 4);
  p.value = get_u32(d);
  p.pred = pred_of(ctl);
  p.weakly_ordered = test(ctl, 16);
  p.no_snoop = test(ctl, 17);
  p.op = static_cast<uint8_t>((ctl >> 20) & 0x3);
  p.addr = get_u64(d + 8);
  p.barriers = barriers_of(ctl);
  return p;
}

std::string barrier_text(const Barriers& b) {
  std::string s = " [";
  bool any = false;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (any) s += ' ';
    s += name;
    any = true;
  };
  add(b.eb, "EB");
  add(b.rb, "RB");
  add(b.mb, "MB");
  if (!any) return "";
  return s + "]";
}

}  // namespace

// --- opcode tables ---------------------------------------------------------------------------

bool is_valid_opcode(uint8_t raw) {
  switch (raw) {
    case 0x1: case 0x2: case 0x3: case 0x4: case 0x5: case 0x6: case 0x7:
    case 0x8: case 0x9: case 0xA: case 0xB: case 0xC: case 0xD: case 0xF:
      return true;
    default:
      return false;
  }
}

const char* opcode_name_raw(uint8_t raw) {
  switch (raw) {
    case 0x1: return "WREG_32";
    case 0x2: return "WREG_BULK";
    case 0x3: return "MSG_LONG";
    case 0x4: return "MSG_SHORT";
    case 0x5: return "CP_DMA";
    case 0x6: return "REPEAT";
    case 0x7: return "MSG_PROT";
    case 0x8: return "FENCE";
    case 0x9: return "LIN_DMA";
    case 0xA: return "NOP";
    case 0xB: return "STOP";
    case 0xC: return "ARB_POINT";
    case 0xD: return "WAIT";
    case 0xF: return "LOAD_AND_EXE";
    default: return "INVALID";
  }
}

const char* opcode_name(Opcode op) { return opcode_name_raw(static_cast<uint8_t>(op)); }

size_t packet_size(Opcode op) {
  switch (op) {
    case Opcode::WREG_32: return 8;
    case Opcode::WREG_BULK: return 8;  // header only; payload is 8 * size64
    case Opcode::MSG_LONG: return 16;
    case Opcode::MSG_SHORT: return 8;
    case Opcode::CP_DMA: return 16;
    case Opcode::REPEAT: return 8;
    case Opcode::MSG_PROT: return 16;
    case Opcode::FENCE: return 8;
    case Opcode::LIN_DMA: return 24;
    case Opcode::NOP: return 8;
    case Opcode::STOP: return 8;
    case Opcode::ARB_POINT: return 8;
    case Opcode::WAIT: return 8;
    case Opcode::LOAD_AND_EXE: return 16;
  }
  return 0;
}

// --- equality ----------------------------------------------------------------------------------

bool operator==(const Barriers& a, const Barriers& b) { return a.eb == b.eb && a.rb == b.rb && a.mb == b.mb; }
bool operator==(const Wreg32& a, const Wreg32& b) {
  return a.value == b.value && a.reg_offset == b.reg_offset && a.pred == b.pred && a.barriers == b.barriers;
}
bool operator==(const WregBulk& a, const WregBulk& b) {
  return a.reg_offset == b.reg_offset && a.pred == b.pred && a.values == b.values && a.barriers == b.barriers;
}
bool operator==(const MsgLong& a, const MsgLong& b) {
  return a.value == b.value && a.addr == b.addr && a.op == b.op && a.weakly_ordered == b.weakly_ordered &&
         a.no_snoop == b.no_snoop && a.pred == b.pred && a.barriers == b.barriers;
}
bool operator==(const MsgShort& a, const MsgShort& b) {
  return a.value == b.value && a.msg_addr_offset == b.msg_addr_offset && a.weakly_ordered == b.weakly_ordered &&
         a.no_snoop == b.no_snoop && a.op == b.op && a.base == b.base && a.barriers == b.barriers;
}
bool operator==(const CpDma& a, const CpDma& b) {
  return a.tsize == b.tsize && a.src_addr == b.src_addr && a.pred == b.pred && a.barriers == b.barriers;
}
bool operator==(const Repeat& a, const Repeat& b) {
  return a.sore == b.sore && a.o == b.o && a.jmp_ptr == b.jmp_ptr && a.pred == b.pred && a.barriers == b.barriers;
}
bool operator==(const MsgProt& a, const MsgProt& b) {
  return a.value == b.value && a.addr == b.addr && a.op == b.op && a.weakly_ordered == b.weakly_ordered &&
         a.no_snoop == b.no_snoop && a.pred == b.pred && a.barriers == b.barriers;
}
bool operator==(const Fence& a, const Fence& b) {
  return a.dec_val == b.dec_val && a.target_val == b.target_val && a.id == b.id && a.pred == b.pred &&
         a.barriers == b.barriers;
}
bool operator==(const LinDma& a, const LinDma& b) {
  return a.tsize == b.tsize && a.wr_comp_en == b.wr_comp_en && a.transpose == b.transpose && a.dtype == b.dtype &&
         a.lin == b.lin && a.mem_set == b.mem_set && a.compress == b.compress && a.decompress == b.decompress &&
         a.context_id == b.context_id && a.src_addr == b.src_addr && a.dst_addr == b.dst_addr &&
         a.barriers == b.barriers;
}
bool operator==(const Nop& a, const Nop& b) { return a.barriers == b.barriers; }
bool operator==(const Stop& a, const Stop& b) { return a.barriers == b.barriers; }
bool operator==(const ArbPoint& a, const ArbPoint& b) {
  return a.priority == b.priority && a.rls == b.rls && a.pred == b.pred && a.barriers == b.barriers;
}
bool operator==(const Wait& a, const Wait& b) {
  return a.num_cycles_to_wait == b.num_cycles_to_wait && a.inc_val == b.inc_val && a.id == b.id &&
         a.barriers == b.barriers;
}
bool operator==(const LoadAndExe& a, const LoadAndExe& b) {
  return a.dst == b.dst && a.load == b.load && a.exe == b.exe && a.etype == b.etype && a.src_addr == b.src_addr &&
         a.pred == b.pred && a.barriers == b.barriers;
}

// --- opcode / size of a Packet ---------------------------------------------------------------

namespace {
template <typename T> struct OpcodeOf;
template <> struct OpcodeOf<Wreg32> { static constexpr Opcode value = Opcode::WREG_32; };
template <> struct OpcodeOf<WregBulk> { static constexpr Opcode value = Opcode::WREG_BULK; };
template <> struct OpcodeOf<MsgLong> { static constexpr Opcode value = Opcode::MSG_LONG; };
template <> struct OpcodeOf<MsgShort> { static constexpr Opcode value = Opcode::MSG_SHORT; };
template <> struct OpcodeOf<CpDma> { static constexpr Opcode value = Opcode::CP_DMA; };
template <> struct OpcodeOf<Repeat> { static constexpr Opcode value = Opcode::REPEAT; };
template <> struct OpcodeOf<MsgProt> { static constexpr Opcode value = Opcode::MSG_PROT; };
template <> struct OpcodeOf<Fence> { static constexpr Opcode value = Opcode::FENCE; };
template <> struct OpcodeOf<LinDma> { static constexpr Opcode value = Opcode::LIN_DMA; };
template <> struct OpcodeOf<Nop> { static constexpr Opcode value = Opcode::NOP; };
template <> struct OpcodeOf<Stop> { static constexpr Opcode value = Opcode::STOP; };
template <> struct OpcodeOf<ArbPoint> { static constexpr Opcode value = Opcode::ARB_POINT; };
template <> struct OpcodeOf<Wait> { static constexpr Opcode value = Opcode::WAIT; };
template <> struct OpcodeOf<LoadAndExe> { static constexpr Opcode value = Opcode::LOAD_AND_EXE; };
}  // namespace

Opcode opcode_of(const Packet& p) {
  return std::visit([](const auto& pkt) { return OpcodeOf<std::decay_t<decltype(pkt)>>::value; }, p);
}

size_t encoded_size(const Packet& p) {
  if (const auto* bulk = std::get_if<WregBulk>(&p)) return wreg_bulk_size(bulk->size64());
  return packet_size(opcode_of(p));
}

// --- encoders ------------------------------------------------------------------------------------

void encode(const Wreg32& p, std::vector<uint8_t>& out) {
  check_width(p.pred, 5, "WREG_32", "pred");
  put_u32(out, p.value);
  put_u32(out, ctl_common(Opcode::WREG_32, p.barriers) | p.pred | (static_cast<uint32_t>(p.reg_offset) << 8));
}

void encode(const WregBulk& p, std::vector<uint8_t>& out) {
  check_width(p.pred, 5, "WREG_BULK", "pred");
  check_width(p.values.size(), 16, "WREG_BULK", "size64");
  put_u32(out, static_cast<uint32_t>(p.values.size()));
  put_u32(out, ctl_common(Opcode::WREG_BULK, p.barriers) | p.pred | (static_cast<uint32_t>(p.reg_offset) << 8));
  for (uint64_t v : p.values) put_u64(out, v);
}

void encode(const MsgLong& p, std::vector<uint8_t>& out) {
  encode_long_message(p, Opcode::MSG_LONG, "MSG_LONG", out);
}

void encode(const MsgShort& p, std::vector<uint8_t>& out) {
  check_width(p.op, 2, "MSG_SHORT", "op");
  check_width(p.base, 2, "MSG_SHORT", "base");
  uint32_t ctl = ctl_common(Opcode::MSG_SHORT, p.barriers) | p.msg_addr_offset | bit(p.weakly_ordered, 16) |
                 bit(p.no_snoop, 17) | (static_cast<uint32_t>(p.op) << 20) | (static_cast<uint32_t>(p.base) << 22);
  put_u32(out, p.value);
  put_u32(out, ctl);
}

void encode(const CpDma& p, std::vector<uint8_t>& out) {
  check_width(p.pred, 5, "CP_DMA", "pred");
  put_u32(out, p.tsize);
  put_u32(out, ctl_common(Opcode::CP_DMA, p.barriers) | p.pred);
  put_u64(out, p.src_addr);
}

void encode(const Repeat& p, std::vector<uint8_t>& out) {
  check_width(p.pred, 5, "REPEAT", "pred");
  put_u32(out, bit(p.sore, 0) | bit(p.o, 1) | (static_cast<uint32_t>(p.jmp_ptr) << 16));
  put_u32(out, ctl_common(Opcode::REPEAT, p.barriers) | p.pred);
}

void encode(const MsgProt& p, std::vector<uint8_t>& out) {
  encode_long_message(p, Opcode::MSG_PROT, "MSG_PROT", out);
}

void encode(const Fence& p, std::vector<uint8_t>& out) {
  check_width(p.dec_val, 4, "FENCE", "dec_val");
  check_width(p.id, 2, "FENCE", "id");
  check_width(p.pred, 5, "FENCE", "pred");
  put_u32(out, static_cast<uint32_t>(p.dec_val) | (static_cast<uint32_t>(p.target_val) << 16) |
                   (static_cast<uint32_t>(p.id) << 30));
  put_u32(out, ctl_common(Opcode::FENCE, p.barriers) | p.pred);
}

void encode(const LinDma& p, std::vector<uint8_t>& out) {
  check_width(p.dst_addr, 56, "LIN_DMA", "dst_addr");
  uint32_t ctl = ctl_common(Opcode::LIN_DMA, p.barriers) | bit(p.wr_comp_en, 0) | bit(p.transpose, 1) |
                 bit(p.dtype, 2) | bit(p.lin, 3) | bit(p.mem_set, 4) | bit(p.compress, 5) | bit(p.decompress, 6) |
                 (static_cast<uint32_t>(p.context_id & 0xFF) << 16);
  put_u32(out, p.tsize);
  put_u32(out, ctl);
  put_u64(out, p.src_addr);
  put_u64(out, p.dst_addr | (static_cast<uint64_t>(p.context_id >> 8) << 56));
}

void encode(const Nop& p, std::vector<uint8_t>& out) {
  put_u32(out, 0);
  put_u32(out, ctl_common(Opcode::NOP, p.barriers));
}

void encode(const Stop& p, std::vector<uint8_t>& out) {
  put_u32(out, 0);
  put_u32(out, ctl_common(Opcode::STOP, p.barriers));
}

void encode(const ArbPoint& p, std::vector<uint8_t>& out) {
  check_width(p.pred, 5, "ARB_POINT", "pred");
  put_u32(out, static_cast<uint32_t>(p.priority) | bit(p.rls, 31));
  put_u32(out, ctl_common(Opcode::ARB_POINT, p.barriers) | p.pred);
}

void encode(const Wait& p, std::vector<uint8_t>& out) {
  check_width(p.num_cycles_to_wait, 24, "WAIT", "num_cycles_to_wait");
  check_width(p.inc_val, 4, "WAIT", "inc_val");
  check_width(p.id, 2, "WAIT", "id");
  put_u32(out, p.num_cycles_to_wait | (static_cast<uint32_t>(p.inc_val) << 24) |
                   (static_cast<uint32_t>(p.id) << 28));
  put_u32(out, ctl_common(Opcode::WAIT, p.barriers));
}

void encode(const LoadAndExe& p, std::vector<uint8_t>& out) {
  check_width(p.pred, 5, "LOAD_AND_EXE", "pred");
  put_u32(out, bit(p.dst, 0) | bit(p.load, 8) | bit(p.exe, 9) | bit(p.etype, 10));
  put_u32(out, ctl_common(Opcode::LOAD_AND_EXE, p.barriers) | p.pred);
  put_u64(out, p.src_addr);
}

void encode(const Packet& p, std::vector<uint8_t>& out) {
  std::visit([&out](const auto& pkt) { encode(pkt, out); }, p);
}

uint32_t sob_write_value(uint16_t value, bool add) {
  check_width(value, 15, "SOB write", "value");
  return static_cast<uint32_t>(value) | (add ? kSobModeAdd : 0u);
}

uint32_t monitor_arm_value(uint8_t sync_group_id, uint8_t mask, bool equal_mode, uint16_t target) {
  check_width(target, 15, "monitor arm", "target");
  return (static_cast<uint32_t>(sync_group_id) << kMonArmSidShift) |
         (static_cast<uint32_t>(mask) << kMonArmMaskShift) | (equal_mode ? (1u << kMonArmModeShift) : 0u) |
         (static_cast<uint32_t>(target) << kMonArmValueShift);
}

uint8_t single_sob_mask(uint16_t sob_id) { return static_cast<uint8_t>(~(1u << (sob_id % 8)) & 0xFFu); }

// --- builder -------------------------------------------------------------------------------------

CommandBufferBuilder& CommandBufferBuilder::nop(Barriers b) {
  encode(Nop{b}, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::wreg32(uint16_t reg_offset, uint32_t value, Barriers b, uint8_t pred) {
  Wreg32 p;
  p.value = value;
  p.reg_offset = reg_offset;
  p.pred = pred;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::wreg_bulk(uint16_t reg_offset, std::vector<uint64_t> values,
                                                      Barriers b, uint8_t pred) {
  WregBulk p;
  p.reg_offset = reg_offset;
  p.pred = pred;
  p.values = std::move(values);
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::msg_long(uint64_t addr, uint32_t value, Barriers b, uint8_t op) {
  MsgLong p;
  p.value = value;
  p.addr = addr;
  p.op = op;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::msg_short(uint8_t base, uint16_t offset, uint32_t value, Barriers b,
                                                      uint8_t op) {
  MsgShort p;
  p.value = value;
  p.msg_addr_offset = offset;
  p.base = base;
  p.op = op;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::msg_prot(uint64_t addr, uint32_t value, Barriers b, uint8_t op) {
  MsgProt p;
  p.value = value;
  p.addr = addr;
  p.op = op;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::fence(uint8_t id, uint8_t target, uint8_t dec, Barriers b,
                                                  uint8_t pred) {
  Fence p;
  p.id = id;
  p.target_val = target;
  p.dec_val = dec;
  p.pred = pred;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::lin_dma(uint64_t src, uint64_t dst, uint32_t tsize, bool wr_comp_en,
                                                    Barriers b) {
  LinDma p;
  p.src_addr = src;
  p.dst_addr = dst;
  p.tsize = tsize;
  p.wr_comp_en = wr_comp_en;
  p.lin = true;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::memset(uint64_t dst, uint64_t value, uint32_t tsize, bool wr_comp_en,
                                                   Barriers b) {
  LinDma p;
  p.src_addr = value;
  p.dst_addr = dst;
  p.tsize = tsize;
  p.wr_comp_en = wr_comp_en;
  p.lin = true;
  p.mem_set = true;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::cp_dma(uint64_t src, uint32_t tsize, Barriers b, uint8_t pred) {
  CpDma p;
  p.src_addr = src;
  p.tsize = tsize;
  p.pred = pred;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::repeat(uint16_t jmp_ptr, bool sore, bool o, Barriers b, uint8_t pred) {
  Repeat p;
  p.jmp_ptr = jmp_ptr;
  p.sore = sore;
  p.o = o;
  p.pred = pred;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::stop(Barriers b) {
  encode(Stop{b}, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::arb_point(uint8_t priority, bool release, Barriers b, uint8_t pred) {
  ArbPoint p;
  p.priority = priority;
  p.rls = release;
  p.pred = pred;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::wait(uint32_t cycles, uint8_t fence_id, uint8_t inc_val, Barriers b) {
  Wait p;
  p.num_cycles_to_wait = cycles;
  p.id = fence_id;
  p.inc_val = inc_val;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::load_and_exe(uint64_t src, bool load, bool exe, bool scalar_dst,
                                                         bool etype, Barriers b, uint8_t pred) {
  LoadAndExe p;
  p.src_addr = src;
  p.load = load;
  p.exe = exe;
  p.dst = scalar_dst;
  p.etype = etype;
  p.pred = pred;
  p.barriers = b;
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::add(const Packet& p) {
  encode(p, bytes_);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::raw(const uint8_t* data, size_t size) {
  if (size != 0) bytes_.insert(bytes_.end(), data, data + size);
  return *this;
}

CommandBufferBuilder& CommandBufferBuilder::raw_header(uint32_t dword0, uint32_t ctl) {
  put_u32(bytes_, dword0);
  put_u32(bytes_, ctl);
  return *this;
}

// --- decoder -------------------------------------------------------------------------------------

DecodeResult decode(const uint8_t* data, size_t available) {
  DecodeResult r;
  if (data == nullptr || available < kHeaderSize) {
    r.error = DecodeError::kTruncated;
    r.size = kHeaderSize;
    r.message = "packet header is out of buffer boundary (" + std::to_string(available) +
                " of 8 header bytes available)";
    return r;
  }
  const uint32_t dw0 = get_u32(data);
  const uint32_t ctl = get_u32(data + 4);
  const uint8_t raw = static_cast<uint8_t>((ctl & kCtlOpcodeMask) >> kCtlOpcodeShift);
  r.opcode = raw;
  r.opcode_known = true;
  if (!is_valid_opcode(raw)) {
    r.error = DecodeError::kInvalidOpcode;
    r.message = "invalid packet id " + std::to_string(raw) + " (ctl " + hex(ctl) + ")";
    return r;
  }
  const Opcode op = static_cast<Opcode>(raw);
  size_t need = packet_size(op);
  if (op == Opcode::WREG_BULK) need = wreg_bulk_size(static_cast<uint16_t>(dw0 & 0xFFFF));
  if (need > available) {
    r.error = DecodeError::kTruncated;
    r.size = need;
    r.message = std::string("packet ") + opcode_name(op) + " needs " + std::to_string(need) + " bytes, only " +
                std::to_string(available) + " available";
    return r;
  }
  const Barriers bars = barriers_of(ctl);
  switch (op) {
    case Opcode::WREG_32: {
      Wreg32 p;
      p.value = dw0;
      p.reg_offset = static_cast<uint16_t>((ctl >> 8) & 0xFFFF);
      p.pred = pred_of(ctl);
      p.barriers = bars;
      r.packet = p;
      break;
    }
    case Opcode::WREG_BULK: {
      WregBulk p;
      const size_t n = dw0 & 0xFFFF;
      p.reg_offset = static_cast<uint16_t>((ctl >> 8) & 0xFFFF);
      p.pred = pred_of(ctl);
      p.barriers = bars;
      p.values.reserve(n);
      for (size_t i = 0; i < n; ++i) p.values.push_back(get_u64(data + kHeaderSize + 8 * i));
      r.packet = std::move(p);
      break;
    }
    case Opcode::MSG_LONG:
      r.packet = decode_long_message<MsgLong>(data);
      break;
    case Opcode::MSG_SHORT: {
      MsgShort p;
      p.value = dw0;
      p.msg_addr_offset = static_cast<uint16_t>(ctl & 0xFFFF);
      p.weakly_ordered = test(ctl, 16);
      p.no_snoop = test(ctl, 17);
      p.op = static_cast<uint8_t>((ctl >> 20) & 0x3);
      p.base = static_cast<uint8_t>((ctl >> 22) & 0x3);
      p.barriers = bars;
      r.packet = p;
      break;
    }
    case Opcode::CP_DMA: {
      CpDma p;
      p.tsize = dw0;
      p.pred = pred_of(ctl);
      p.src_addr = get_u64(data + 8);
      p.barriers = bars;
      r.packet = p;
      break;
    }
    case Opcode::REPEAT: {
      Repeat p;
      p.sore = test(dw0, 0);
      p.o = test(dw0, 1);
      p.jmp_ptr = static_cast<uint16_t>(dw0 >> 16);
      p.pred = pred_of(ctl);
      p.barriers = bars;
      r.packet = p;
      break;
    }
    case Opcode::MSG_PROT:
      r.packet = decode_long_message<MsgProt>(data);
      break;
    case Opcode::FENCE: {
      Fence p;
      p.dec_val = static_cast<uint8_t>(dw0 & 0xF);
      p.target_val = static_cast<uint8_t>((dw0 >> 16) & 0xFF);
      p.id = static_cast<uint8_t>((dw0 >> 30) & 0x3);
      p.pred = pred_of(ctl);
      p.barriers = bars;
      r.packet = p;
      break;
    }
    case Opcode::LIN_DMA: {
      LinDma p;
      const uint64_t dst_word = get_u64(data + 16);
      p.tsize = dw0;
      p.wr_comp_en = test(ctl, 0);
      p.transpose = test(ctl, 1);
      p.dtype = test(ctl, 2);
      p.lin = test(ctl, 3);
      p.mem_set = test(ctl, 4);
      p.compress = test(ctl, 5);
      p.decompress = test(ctl, 6);
      p.context_id = static_cast<uint16_t>(((ctl >> 16) & 0xFF) | ((dst_word >> 56) << 8));
      p.src_addr = get_u64(data + 8);
      p.dst_addr = dst_word & kLinDmaDstAddrMask;
      p.barriers = bars;
      r.packet = p;
      break;
    }
    case Opcode::NOP:
      r.packet = Nop{bars};
      break;
    case Opcode::STOP:
      r.packet = Stop{bars};
      break;
    case Opcode::ARB_POINT: {
      ArbPoint p;
      p.priority = static_cast<uint8_t>(dw0 & 0xFF);
      p.rls = test(dw0, 31);
      p.pred = pred_of(ctl);
      p.barriers = bars;
      r.packet = p;
      break;
    }
    case Opcode::WAIT: {
      Wait p;
      p.num_cycles_to_wait = dw0 & 0xFFFFFF;
      p.inc_val = static_cast<uint8_t>((dw0 >> 24) & 0xF);
      p.id = static_cast<uint8_t>((dw0 >> 28) & 0x3);
      p.barriers = bars;
      r.packet = p;
      break;
    }
    case Opcode::LOAD_AND_EXE: {
      LoadAndExe p;
      p.dst = test(dw0, 0);
      p.load = test(dw0, 8);
      p.exe = test(dw0, 9);
      p.etype = test(dw0, 10);
      p.src_addr = get_u64(data + 8);
      p.pred = pred_of(ctl);
      p.barriers = bars;
      r.packet = p;
      break;
    }
  }
  r.size = need;
  return r;
}

// --- descriptions --------------------------------------------------------------------------------

namespace {

std::string describe_one(const Wreg32& p) {
  return "WREG_32 reg_offset=" + hex(p.reg_offset) + " value=" + hex(p.value) + " pred=" + std::to_string(p.pred) +
         barrier_text(p.barriers);
}
std::string describe_one(const WregBulk& p) {
  std::string s = "WREG_BULK reg_offset=" + hex(p.reg_offset) + " size64=" + std::to_string(p.values.size()) +
                  " pred=" + std::to_string(p.pred);
  const size_t shown = p.values.size() < 4 ? p.values.size() : 4;
  if (shown != 0) {
    s += " values={";
    for (size_t i = 0; i < shown; ++i) s += (i ? "," : "") + hex(p.values[i]);
    if (shown < p.values.size()) s += ",...";
    s += "}";
  }
  return s + barrier_text(p.barriers);
}
template <typename T>
std::string describe_long(const char* name, const T& p) {
  return std::string(name) + " addr=" + hex(p.addr) + " value=" + hex(p.value) + " op=" + std::to_string(p.op) +
         (p.weakly_ordered ? " wo" : "") + (p.no_snoop ? " ns" : "") + " pred=" + std::to_string(p.pred) +
         barrier_text(p.barriers);
}
std::string describe_one(const MsgLong& p) { return describe_long("MSG_LONG", p); }
std::string describe_one(const MsgProt& p) { return describe_long("MSG_PROT", p); }
std::string describe_one(const MsgShort& p) {
  return "MSG_SHORT base=" + std::to_string(p.base) + " offset=" + hex(p.msg_addr_offset) + " value=" +
         hex(p.value) + " op=" + std::to_string(p.op) + (p.weakly_ordered ? " wo" : "") + (p.no_snoop ? " ns" : "") +
         barrier_text(p.barriers);
}
std::string describe_one(const CpDma& p) {
  return "CP_DMA src=" + hex(p.src_addr) + " tsize=" + std::to_string(p.tsize) + " pred=" + std::to_string(p.pred) +
         barrier_text(p.barriers);
}
std::string describe_one(const Repeat& p) {
  return "REPEAT jmp_ptr=" + hex(p.jmp_ptr) + " sore=" + std::to_string(p.sore) + " o=" + std::to_string(p.o) +
         " pred=" + std::to_string(p.pred) + barrier_text(p.barriers);
}
std::string describe_one(const Fence& p) {
  return "FENCE id=" + std::to_string(p.id) + " target=" + std::to_string(p.target_val) +
         " dec=" + std::to_string(p.dec_val) + " pred=" + std::to_string(p.pred) + barrier_text(p.barriers);
}
std::string describe_one(const LinDma& p) {
  std::string flags;
  auto flag = [&flags](bool on, const char* name) {
    if (on) flags += std::string(" ") + name;
  };
  flag(p.lin, "lin");
  flag(p.mem_set, "memset");
  flag(p.wr_comp_en, "wr_comp");
  flag(p.transpose, "transpose");
  flag(p.dtype, "dtype");
  flag(p.compress, "compress");
  flag(p.decompress, "decompress");
  return "LIN_DMA " + std::string(p.mem_set ? "value=" : "src=") + hex(p.src_addr) + " dst=" + hex(p.dst_addr) +
         " tsize=" + std::to_string(p.tsize) + " ctx=" + hex(p.context_id) + flags + barrier_text(p.barriers);
}
std::string describe_one(const Nop& p) { return "NOP" + barrier_text(p.barriers); }
std::string describe_one(const Stop& p) { return "STOP" + barrier_text(p.barriers); }
std::string describe_one(const ArbPoint& p) {
  return "ARB_POINT priority=" + std::to_string(p.priority) + (p.rls ? " release" : " grant") +
         " pred=" + std::to_string(p.pred) + barrier_text(p.barriers);
}
std::string describe_one(const Wait& p) {
  return "WAIT cycles=" + std::to_string(p.num_cycles_to_wait) + " id=" + std::to_string(p.id) +
         " inc=" + std::to_string(p.inc_val) + barrier_text(p.barriers);
}
std::string describe_one(const LoadAndExe& p) {
  return "LOAD_AND_EXE src=" + hex(p.src_addr) + " dst=" + std::string(p.dst ? "scalar" : "pred") +
         (p.load ? " load" : "") + (p.exe ? " exe" : "") + " etype=" + std::to_string(p.etype) +
         " pred=" + std::to_string(p.pred) + barrier_text(p.barriers);
}

}  // namespace

std::string describe(const Packet& p) {
  return std::visit([](const auto& pkt) { return describe_one(pkt); }, p);
}

std::string disassemble(const uint8_t* data, size_t size) {
  std::string out;
  size_t offset = 0;
  char prefix[32];
  while (offset < size) {
    DecodeResult r = decode(data + offset, size - offset);
    std::snprintf(prefix, sizeof prefix, "0x%04zx: ", offset);
    out += prefix;
    if (!r.ok()) {
      out += "error: " + r.message + "\n";
      break;
    }
    out += describe(r.packet) + "\n";
    offset += r.size;
  }
  return out;
}

}  // namespace hpusim::qman
