// Gaudi 1 command-buffer (CB) parser of the kernel driver, as pure functions.
//
// What it models (upstream drivers/accel/habanalabs/gaudi/gaudi.c: gaudi_cs_parser and the
// functions it calls; reference/gaudi-driver-and-command-submission.md §5):
//
// * External queues (the PCI-DMA QMANs, DMA_0_x / DMA_1_x) with the MMU on, which is always the
//   case on Gaudi: parse_external_cb() (gaudi_parse_cb_mmu).
//     1. Copy first: the user bytes are copied into the patched CB before anything is looked at,
//        and only the copy is validated, so a user who rewrites the CB meanwhile (TOCTOU) cannot
//        slip a packet past the checks.
//     2. Validate the copy packet by packet (gaudi_validate_cb). At each offset the opcode is
//        ctl[28:24] of the 8-byte header; the size is the driver's fixed size table (WREG_BULK
//        counts as 8). Checks, in this order:
//          - opcode not one of the 14 packet ids           -> -EINVAL "Invalid packet id"
//          - packet extends past user_cb_size              -> -EINVAL "packet 0x.. is out of CB boundary"
//            (also a trailing fragment shorter than the 8-byte header)
//          - MSG_PROT                                       -> -EPERM  "User not allowed to use MSG_PROT"
//          - CP_DMA                                         -> -EPERM  "User not allowed to use CP_DMA"
//          - STOP                                           -> -EPERM  "User not allowed to use STOP"
//          - WREG_BULK (variable length, cannot be parsed)  -> -EPERM  "User not allowed to use WREG_BULK"
//          - LOAD_AND_EXE with dst=1 (scalar mode)          -> -EPERM  "User not allowed to use Load and Execute"
//          - WAIT (valid id, but not on the allowed list)   -> -EINVAL "Invalid packet header"
//          - LIN_DMA                                        -> accepted, sets contains_dma_pkt
//          - WREG_32, MSG_LONG, MSG_SHORT, REPEAT, FENCE, NOP, ARB_POINT, LOAD_AND_EXE(dst=0)
//                                                           -> accepted as they are
//        Every message also names the packet's offset in the CB and its opcode. The first bad
//        packet ends the parse; a rejected CB yields no patched bytes.
//     3. Append the completion: NOP padding (ctl = opcode NOP, dword0 = 0), then two 16-byte
//        MSG_PROT packets: {value = cq_entry, addr = cq_address, MB, EB iff the CB contains a
//        LIN_DMA} and {value = msi_value (1), addr = msi_address, MB}. The padding keeps the two
//        MSG_PROTs inside one 128-byte device cache line, so the CP never has to fetch the last
//        packet of a CB the host may already have released. Two placements:
//          - kEndOnCacheLine (the rule as the project's reference notes state it): pad so
//            the pair ENDS on a 128-byte boundary: patched size = round_up(user + 32, 128).
//          - kUpstream (default; what the upstream Gaudi driver does): pad only
//            when the pair would straddle a 128-byte boundary, and then to that boundary, so the
//            pair STARTS on it: patched size = user + 32 if user + 32 <= round_up(user, 128),
//            else round_up(user, 128) + 32.
//        With append = false (a CS that needs no completion) nothing is appended.
//
// * Internal queues (DMA 2-7, MME, TPC, NIC): their CBs are not parsed; check_internal_cb()
//   (gaudi_parse_cb_no_ext_queue) only requires [address, address + size) to lie inside the SRAM
//   user range, the DRAM user range or the host VA range, else -EFAULT "CB address ... for
//   internal QMAN is not valid". Like hl_mem_area_inside_range, a zero-size area or one whose end
//   wraps past 2^64 is never inside a range.
//
// Not modelled here: the no-MMU path (LIN_DMA split per scatter-gather chunk of pinned host
// memory), the "disabled NIC queue" check (needs device state), and the CS ioctl's own chunk
// checks that run before the parser (get_cb_from_cs_chunk: unknown CB handle, or
// cb_size < 8 || cb_size > CB object size -> "CB size %u invalid", -EINVAL). So in the real
// driver a 0-byte external CB never reaches the parser; here it parses as an empty CB (no user
// packets, only padding + the two MSG_PROTs) and the CS layer is expected to reject it first.
//
// Error codes are negative <cerrno> values, as the driver returns them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hpusim::driver {

inline constexpr size_t kDeviceCacheLineSize = 128;  // DEVICE_CACHE_LINE_SIZE
inline constexpr size_t kMsgProtSize = 16;
inline constexpr size_t kCompletionPacketsSize = 2 * kMsgProtSize;
// cb_size is a u32 in the CS ioctl's chunk; larger sizes are rejected with -EINVAL.
inline constexpr uint64_t kMaxUserCbSize = 0xFFFFFFFFull;

enum class CompletionPlacement : uint8_t {
  kEndOnCacheLine,  // the two MSG_PROTs end on a 128-byte boundary
  kUpstream,        // pad only if the pair would cross a 128-byte boundary (upstream; default)
};

struct CompletionPackets {
  uint64_t cq_address = 0;  // CQ slot written by the first MSG_PROT
  uint32_t cq_entry = 0;    // CQ entry value
  uint64_t msi_address = 0; // MSI doorbell written by the second MSG_PROT
  uint32_t msi_value = 1;
  bool append = true;       // false: the CS needs no completion; the CB is copied and validated only
  CompletionPlacement placement = CompletionPlacement::kUpstream;
};

struct ExternalParseResult {
  int error = 0;                 // 0, -EINVAL, -EPERM or -EFAULT
  std::string message;           // empty when error == 0
  std::vector<uint8_t> patched;  // the patched CB; empty on error
  bool contains_dma_pkt = false;
  size_t packet_count = 0;       // user packets accepted (on error: before the rejected one)
  size_t error_offset = 0;       // offset of the rejected packet in the user CB
  size_t padding_bytes = 0;      // NOP padding appended after the user bytes
  size_t completion_offset = 0;  // offset of the first MSG_PROT in `patched`

  bool ok() const { return error == 0; }
};

// Half-open ranges [start, end) an internal-queue CB may live in.
struct InternalCbRanges {
  uint64_t sram_user_base = 0;
  uint64_t sram_end = 0;
  uint64_t dram_user_base = 0;
  uint64_t dram_end = 0;
  uint64_t host_va_start = 0;
  uint64_t host_va_end = 0;
};

// Size of the patched CB for a user CB of `user_cb_size` bytes when the completion is appended.
size_t patched_cb_size(size_t user_cb_size, CompletionPlacement placement);

// Copy, validate and patch a CB submitted to an external queue. `user_cb` may be null only when
// `user_cb_size` is 0 (a null pointer with a non-zero size is -EFAULT).
ExternalParseResult parse_external_cb(const uint8_t* user_cb, size_t user_cb_size,
                                      const CompletionPackets& completion);

// 0 if [address, address + size) lies inside one of `ranges`, else -EFAULT with a message
// (written to *message when it is not null; cleared on success).
int check_internal_cb(uint64_t address, uint64_t size, const InternalCbRanges& ranges, std::string* message);

}  // namespace hpusim::driver
