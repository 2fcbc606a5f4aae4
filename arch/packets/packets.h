// The Gaudi 1 QMAN packet set: the 8/16/24-byte commands a QMAN command processor (CP) fetches
// from a command buffer (CB). Exact encodings, little-endian, as in the public habanalabs header
// drivers/accel/habanalabs/include/gaudi/gaudi_packets.h (and its bit-field twin in hl-thunk).
//
// Every packet starts with an 8-byte header whose second dword is the `ctl` word:
//   ctl[28:24] opcode, ctl[29] EB (engine barrier), ctl[30] RB (register barrier),
//   ctl[31] MB (message barrier), ctl[4:0] predicate index in the packets that have one.
// Packet-specific fields live in the first dword, in the rest of `ctl`, and in the 64-bit words
// that follow the header (MSG_LONG/MSG_PROT/CP_DMA/LOAD_AND_EXE: one, LIN_DMA: two, WREG_BULK: n).
//
// This file offers one struct per packet, encoders that append a packet to a byte buffer, a fluent
// CommandBufferBuilder, a bounded decoder that never reads past the bytes it is given, and
// human-readable descriptions for traces and error messages. Encoders throw std::invalid_argument
// when a field does not fit its bit width (silently truncating a hand-built packet would hide a
// bug); raw bytes can still be appended with CommandBufferBuilder::raw() to build bad packets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace hpusim::qman {

// ---------------------------------------------------------------------------------------------
// Opcodes and header fields
// ---------------------------------------------------------------------------------------------

enum class Opcode : uint8_t {
  WREG_32 = 0x1,
  WREG_BULK = 0x2,
  MSG_LONG = 0x3,
  MSG_SHORT = 0x4,
  CP_DMA = 0x5,
  REPEAT = 0x6,
  MSG_PROT = 0x7,
  FENCE = 0x8,
  LIN_DMA = 0x9,
  NOP = 0xA,
  STOP = 0xB,
  ARB_POINT = 0xC,
  WAIT = 0xD,
  LOAD_AND_EXE = 0xF,
};

inline constexpr uint32_t kCtlOpcodeShift = 24;
inline constexpr uint32_t kCtlOpcodeMask = 0x1F000000u;
inline constexpr uint32_t kCtlEngineBarrier = 1u << 29;    // EB
inline constexpr uint32_t kCtlRegisterBarrier = 1u << 30;  // RB
inline constexpr uint32_t kCtlMessageBarrier = 1u << 31;   // MB
inline constexpr uint32_t kCtlPredMask = 0x1Fu;
// The opcode seen as bits [60:56] of the little-endian 64-bit header.
inline constexpr uint64_t kHeaderOpcodeMask = 0x1F00000000000000ull;
inline constexpr unsigned kHeaderOpcodeShift = 56;
// Number of opcode values the 5-bit field can hold (the driver's MAX_PACKET_ID).
inline constexpr unsigned kMaxPacketId = 32;
inline constexpr size_t kHeaderSize = 8;
// LIN_DMA dst_addr is 56 bits; bits [63:56] of that word carry context_id[15:8].
inline constexpr uint64_t kLinDmaDstAddrMask = 0x00FFFFFFFFFFFFFFull;

// MSG_SHORT `value` layouts when the target is a sync object or a monitor-arm register.
inline constexpr uint32_t kSobValueMask = 0x7FFFu;       // sync_value[14:0]
inline constexpr uint32_t kSobTraceEvict = 1u << 30;     // te
inline constexpr uint32_t kSobModeAdd = 1u << 31;        // mode: 1 = add, 0 = set
inline constexpr unsigned kMonArmSidShift = 0;           // sync group id = sob / 8, [7:0]
inline constexpr unsigned kMonArmMaskShift = 8;          // mask[15:8], set bit = SOB ignored
inline constexpr unsigned kMonArmModeShift = 16;         // 0 = value >= target, 1 = equal
inline constexpr unsigned kMonArmValueShift = 17;        // target[31:17]

// MSG_SHORT `base` values selecting CP_MSG_BASE0..3.
inline constexpr uint8_t kMsgBaseEnMonitors = 0;
inline constexpr uint8_t kMsgBaseEnSobs = 1;
inline constexpr uint8_t kMsgBaseWsMonitors = 2;
inline constexpr uint8_t kMsgBaseWsSobs = 3;

bool is_valid_opcode(uint8_t raw);
// Name of the opcode ("MSG_SHORT"), or "INVALID" for a value that is not one of the 14.
const char* opcode_name(Opcode op);
const char* opcode_name_raw(uint8_t raw);
// Fixed size in bytes: WREG_BULK counts only its 8-byte header (the driver's size table does
// the same); 0 for a value that is not a valid opcode.
size_t packet_size(Opcode op);
// Size of a WREG_BULK with `size64` 64-bit payload words.
constexpr size_t wreg_bulk_size(uint16_t size64) { return kHeaderSize + 8 * static_cast<size_t>(size64); }

// ---------------------------------------------------------------------------------------------
// Packets
// ---------------------------------------------------------------------------------------------

struct Barriers {
  bool eb = false;  // engine barrier: wait for the engine to finish earlier work
  bool rb = false;  // register barrier
  bool mb = false;  // message barrier: wait for earlier messages to complete
};
bool operator==(const Barriers& a, const Barriers& b);
inline bool operator!=(const Barriers& a, const Barriers& b) { return !(a == b); }

// RB|MB, what the driver and hl-thunk use for register writes, messages, fences and DMAs.
inline constexpr Barriers kRbMb{false, true, true};
inline constexpr Barriers kMbOnly{false, false, true};
inline constexpr Barriers kNoBarriers{false, false, false};

// 0x1: write one 32-bit register of the QMAN's engine. reg_offset is ctl[23:8].
struct Wreg32 {
  uint32_t value = 0;
  uint16_t reg_offset = 0;
  uint8_t pred = 0;  // 5 bits
  Barriers barriers;
};

// 0x2: write 2*size64 consecutive registers from the 64-bit payload words that follow.
// size64 (dword0[15:0]) is values.size(), at most 65535.
struct WregBulk {
  uint16_t reg_offset = 0;
  uint8_t pred = 0;
  std::vector<uint64_t> values;
  Barriers barriers;
  uint16_t size64() const { return static_cast<uint16_t>(values.size()); }
};

// 0x3: 32-bit write of `value` (op 0) or a timestamp (op 1) to any 64-bit address.
// weakly_ordered ctl[16], no_snoop ctl[17], op ctl[21:20].
struct MsgLong {
  uint32_t value = 0;
  uint64_t addr = 0;
  uint8_t op = 0;  // 2 bits
  bool weakly_ordered = false;
  bool no_snoop = false;
  uint8_t pred = 0;
  Barriers barriers;
};

// 0x4: 32-bit write to CP_MSG_BASE<base> + msg_addr_offset. No predicate.
// msg_addr_offset ctl[15:0], weakly_ordered ctl[16], no_snoop ctl[17], op ctl[21:20], base ctl[23:22].
struct MsgShort {
  uint32_t value = 0;
  uint16_t msg_addr_offset = 0;
  bool weakly_ordered = false;
  bool no_snoop = false;
  uint8_t op = 0;    // 2 bits
  uint8_t base = 0;  // 2 bits
  Barriers barriers;
};

// 0x5: upper CP feeds `tsize` bytes of CB at src_addr to the lower CP.
struct CpDma {
  uint32_t tsize = 0;
  uint64_t src_addr = 0;
  uint8_t pred = 0;
  Barriers barriers;
};

// 0x6: loop construct. sore dword0[0], o dword0[1], jmp_ptr dword0[31:16]. The QMAN model's reading
// of the fields (sore = 1 starts a loop of level o counted by scalar RF o, sore = 0 ends its body and
// jumps back to jmp_ptr, a byte offset in the command buffer) is in README.md.
struct Repeat {
  bool sore = false;
  bool o = false;
  uint16_t jmp_ptr = 0;
  uint8_t pred = 0;
  Barriers barriers;
};

// 0x7: same layout as MSG_LONG; only the driver may emit it (completion + MSI).
struct MsgProt {
  uint32_t value = 0;
  uint64_t addr = 0;
  uint8_t op = 0;
  bool weakly_ordered = false;
  bool no_snoop = false;
  uint8_t pred = 0;
  Barriers barriers;
};

// 0x8: stall until fence counter `id` >= target_val, then subtract dec_val.
// cfg: dec_val[3:0], target_val[23:16], id[31:30].
struct Fence {
  uint8_t dec_val = 0;     // 4 bits
  uint8_t target_val = 0;  // 8 bits
  uint8_t id = 0;          // 2 bits
  uint8_t pred = 0;
  Barriers barriers;
};

// 0x9: linear DMA through the CP_LDMA offsets. ctl: wr_comp_en[0], transpose[1], dtype[2],
// lin[3], mem_set[4], compress[5], decompress[6], context_id_low[23:16] (no predicate: ctl[15:7]
// is reserved). src_addr is the fill value for mem_set. The third word holds dst_addr[55:0] and
// context_id_high[63:56]; context_id here is the full 16-bit value.
struct LinDma {
  uint32_t tsize = 0;
  bool wr_comp_en = false;
  bool transpose = false;
  bool dtype = false;
  bool lin = true;
  bool mem_set = false;
  bool compress = false;
  bool decompress = false;
  uint16_t context_id = 0;
  uint64_t src_addr = 0;
  uint64_t dst_addr = 0;  // 56 bits
  Barriers barriers;
};

// 0xA: padding.
struct Nop {
  Barriers barriers;
};

// 0xB: stops the CP and raises the "CP encountered STOP" error. RB and MB must be 0.
struct Stop {
  Barriers barriers;
};

// 0xC: arbitration point. cfg: priority[7:0], rls[31].
struct ArbPoint {
  uint8_t priority = 0;
  bool rls = false;
  uint8_t pred = 0;
  Barriers barriers;
};

// 0xD: wait num_cycles_to_wait cycles, then add inc_val to fence counter `id`. No predicate;
// RB must be 0. cfg: num_cycles_to_wait[23:0], inc_val[27:24], id[29:28].
struct Wait {
  uint32_t num_cycles_to_wait = 0;  // 24 bits
  uint8_t inc_val = 0;              // 4 bits
  uint8_t id = 0;                   // 2 bits
  Barriers barriers;
};

// 0xF: load predicates (dst=0) or scalar RFs (dst=1, "scalar mode") from src_addr and/or execute
// the packet held in the scalar RFs (etype 0: all / lower two RFs, 1: upper two).
// cfg: dst[0], load[8], exe[9], etype[10].
struct LoadAndExe {
  bool dst = false;
  bool load = false;
  bool exe = false;
  bool etype = false;
  uint64_t src_addr = 0;
  uint8_t pred = 0;
  Barriers barriers;
};

using Packet = std::variant<Wreg32, WregBulk, MsgLong, MsgShort, CpDma, Repeat, MsgProt, Fence, LinDma,
                            Nop, Stop, ArbPoint, Wait, LoadAndExe>;

bool operator==(const Wreg32& a, const Wreg32& b);
bool operator==(const WregBulk& a, const WregBulk& b);
bool operator==(const MsgLong& a, const MsgLong& b);
bool operator==(const MsgShort& a, const MsgShort& b);
bool operator==(const CpDma& a, const CpDma& b);
bool operator==(const Repeat& a, const Repeat& b);
bool operator==(const MsgProt& a, const MsgProt& b);
bool operator==(const Fence& a, const Fence& b);
bool operator==(const LinDma& a, const LinDma& b);
bool operator==(const Nop& a, const Nop& b);
bool operator==(const Stop& a, const Stop& b);
bool operator==(const ArbPoint& a, const ArbPoint& b);
bool operator==(const Wait& a, const Wait& b);
bool operator==(const LoadAndExe& a, const LoadAndExe& b);

Opcode opcode_of(const Packet& p);
// Encoded size in bytes (WREG_BULK includes its payload).
size_t encoded_size(const Packet& p);

// ---------------------------------------------------------------------------------------------
// Encoding: each appends the packet's little-endian bytes to `out`.
// ---------------------------------------------------------------------------------------------

void encode(const Wreg32& p, std::vector<uint8_t>& out);
void encode(const WregBulk& p, std::vector<uint8_t>& out);
void encode(const MsgLong& p, std::vector<uint8_t>& out);
void encode(const MsgShort& p, std::vector<uint8_t>& out);
void encode(const CpDma& p, std::vector<uint8_t>& out);
void encode(const Repeat& p, std::vector<uint8_t>& out);
void encode(const MsgProt& p, std::vector<uint8_t>& out);
void encode(const Fence& p, std::vector<uint8_t>& out);
void encode(const LinDma& p, std::vector<uint8_t>& out);
void encode(const Nop& p, std::vector<uint8_t>& out);
void encode(const Stop& p, std::vector<uint8_t>& out);
void encode(const ArbPoint& p, std::vector<uint8_t>& out);
void encode(const Wait& p, std::vector<uint8_t>& out);
void encode(const LoadAndExe& p, std::vector<uint8_t>& out);
void encode(const Packet& p, std::vector<uint8_t>& out);

// Value of a MSG_SHORT/MSG_LONG write to a sync object: add (mode=1) or set `value` (15 bits).
uint32_t sob_write_value(uint16_t value, bool add);
// Value of a monitor-arm write: sync group `sob_id / 8`, mask of ignored SOBs in the group,
// mode 0 = (>=) / 1 = (==), 15-bit target.
uint32_t monitor_arm_value(uint8_t sync_group_id, uint8_t mask, bool equal_mode, uint16_t target);
// The mask that watches only `sob_id` within its group of 8: ~(1 << (sob_id % 8)).
uint8_t single_sob_mask(uint16_t sob_id);

// Fluent builder of a command buffer. Helpers default to the barriers the driver and hl-thunk
// use for each packet kind (RB|MB for register writes, messages, fences and DMAs; MB for
// MSG_PROT; none for NOP, STOP, ARB_POINT and WAIT).
class CommandBufferBuilder {
 public:
  CommandBufferBuilder& nop(Barriers b = kNoBarriers);
  CommandBufferBuilder& wreg32(uint16_t reg_offset, uint32_t value, Barriers b = kRbMb, uint8_t pred = 0);
  CommandBufferBuilder& wreg_bulk(uint16_t reg_offset, std::vector<uint64_t> values, Barriers b = kRbMb,
                                  uint8_t pred = 0);
  CommandBufferBuilder& msg_long(uint64_t addr, uint32_t value, Barriers b = kRbMb, uint8_t op = 0);
  CommandBufferBuilder& msg_short(uint8_t base, uint16_t offset, uint32_t value, Barriers b = kRbMb,
                                  uint8_t op = 0);
  CommandBufferBuilder& msg_prot(uint64_t addr, uint32_t value, Barriers b = kMbOnly, uint8_t op = 0);
  CommandBufferBuilder& fence(uint8_t id, uint8_t target, uint8_t dec, Barriers b = kRbMb, uint8_t pred = 0);
  CommandBufferBuilder& lin_dma(uint64_t src, uint64_t dst, uint32_t tsize, bool wr_comp_en = false,
                                Barriers b = kRbMb);
  // LIN_DMA with mem_set: fills `tsize` bytes at dst with the 64-bit `value`.
  CommandBufferBuilder& memset(uint64_t dst, uint64_t value, uint32_t tsize, bool wr_comp_en = false,
                               Barriers b = kRbMb);
  CommandBufferBuilder& cp_dma(uint64_t src, uint32_t tsize, Barriers b = kRbMb, uint8_t pred = 0);
  CommandBufferBuilder& repeat(uint16_t jmp_ptr, bool sore, bool o, Barriers b = kRbMb, uint8_t pred = 0);
  CommandBufferBuilder& stop(Barriers b = kNoBarriers);
  CommandBufferBuilder& arb_point(uint8_t priority, bool release, Barriers b = kNoBarriers, uint8_t pred = 0);
  CommandBufferBuilder& wait(uint32_t cycles, uint8_t fence_id, uint8_t inc_val, Barriers b = kNoBarriers);
  CommandBufferBuilder& load_and_exe(uint64_t src, bool load, bool exe, bool scalar_dst = false,
                                     bool etype = false, Barriers b = kRbMb, uint8_t pred = 0);
  CommandBufferBuilder& add(const Packet& p);
  // Appends bytes as they are (for hand-made bad packets).
  CommandBufferBuilder& raw(const uint8_t* data, size_t size);
  // Appends one 8-byte header built from its two dwords.
  CommandBufferBuilder& raw_header(uint32_t dword0, uint32_t ctl);

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t> take() { return std::move(bytes_); }
  size_t size() const { return bytes_.size(); }
  void clear() { bytes_.clear(); }

 private:
  std::vector<uint8_t> bytes_;
};

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

enum class DecodeError : uint8_t {
  kNone = 0,
  kInvalidOpcode,  // ctl[28:24] is not one of the 14 packet ids
  kTruncated,      // the packet extends past the end of the buffer
};

struct DecodeResult {
  DecodeError error = DecodeError::kNone;
  Packet packet;        // valid only when ok()
  size_t size = 0;      // ok: bytes the packet occupies; kTruncated: bytes it would need
                        // (kHeaderSize when not even the header fits); kInvalidOpcode: 0
  uint8_t opcode = 0;   // raw ctl[28:24]; 0 when fewer than 8 bytes were available
  bool opcode_known = false;  // false when the header itself was cut short
  std::string message;  // empty when ok()

  bool ok() const { return error == DecodeError::kNone; }
};

// Decodes the packet at `data`, reading at most `available` bytes. Reserved bits are ignored.
// Never throws, never reads past `available`; `data` may be null when `available` is 0.
DecodeResult decode(const uint8_t* data, size_t available);

// One-line description, e.g. "FENCE id=2 target=1 dec=1 pred=0 [RB MB]".
std::string describe(const Packet& p);
// Multi-line listing of a whole buffer ("0x0010: MSG_SHORT ..."), stopping at the first error.
std::string disassemble(const uint8_t* data, size_t size);

}  // namespace hpusim::qman
