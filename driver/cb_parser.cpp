#include "driver/cb_parser.h"

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "arch/packets/packets.h"

namespace hpusim::driver {
namespace {

using qman::Opcode;

uint32_t read_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

size_t round_up(size_t v, size_t align) { return (v + align - 1) / align * align; }

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

void fail(ExternalParseResult& r, int error, size_t offset, std::string message) {
  r.error = error;
  r.error_offset = offset;
  r.message = std::move(message);
  r.patched.clear();
  r.patched.shrink_to_fit();
  r.padding_bytes = 0;
  r.completion_offset = 0;
}

std::string not_allowed(const char* what, uint8_t id, size_t offset) {
  return format("User not allowed to use %s (packet 0x%x at offset 0x%zx)", what, id, offset);
}

bool inside_range(uint64_t address, uint64_t size, uint64_t start, uint64_t end) {
  const uint64_t area_end = address + size;  // wraps on overflow, caught by area_end > address
  return address >= start && area_end <= end && area_end > address;
}

}  // namespace

size_t patched_cb_size(size_t user_cb_size, CompletionPlacement placement) {
  switch (placement) {
    case CompletionPlacement::kUpstream: {
      const size_t line_end = round_up(user_cb_size, kDeviceCacheLineSize);
      if (user_cb_size + kCompletionPacketsSize > line_end) return line_end + kCompletionPacketsSize;
      return user_cb_size + kCompletionPacketsSize;
    }
    case CompletionPlacement::kEndOnCacheLine:
    default:
      return round_up(user_cb_size + kCompletionPacketsSize, kDeviceCacheLineSize);
  }
}

ExternalParseResult parse_external_cb(const uint8_t* user_cb, size_t user_cb_size,
                                      const CompletionPackets& completion) {
  ExternalParseResult r;
  if (user_cb_size > kMaxUserCbSize) {
    fail(r, -EINVAL, 0, format("user CB size 0x%zx exceeds the 32-bit CB size of the ABI", user_cb_size));
    return r;
  }
  if (user_cb == nullptr && user_cb_size != 0) {
    fail(r, -EFAULT, 0, format("user CB of 0x%zx bytes is not accessible (null address)", user_cb_size));
    return r;
  }

  // 1. Copy first; everything below looks only at the copy.
  const size_t total = completion.append ? patched_cb_size(user_cb_size, completion.placement) : user_cb_size;
  r.patched.reserve(total);
  if (user_cb_size != 0) r.patched.assign(user_cb, user_cb + user_cb_size);
  const uint8_t* cb = r.patched.data();

  // 2. Validate the copy packet by packet.
  size_t offset = 0;
  while (offset < user_cb_size) {
    const size_t left = user_cb_size - offset;
    if (left < qman::kHeaderSize) {
      fail(r, -EINVAL, offset,
           format("packet header at offset 0x%zx is out of CB boundary (%zu of 8 bytes left, user CB size 0x%zx)",
                  offset, left, user_cb_size));
      return r;
    }
    const uint32_t dword0 = read_le32(cb + offset);
    const uint32_t ctl = read_le32(cb + offset + 4);
    const uint8_t id = static_cast<uint8_t>((ctl & qman::kCtlOpcodeMask) >> qman::kCtlOpcodeShift);
    if (!qman::is_valid_opcode(id)) {
      fail(r, -EINVAL, offset, format("Invalid packet id %u (0x%x) at offset 0x%zx", id, id, offset));
      return r;
    }
    const Opcode op = static_cast<Opcode>(id);
    const size_t size = qman::packet_size(op);  // the driver's table: WREG_BULK counts as 8
    if (size > left) {
      fail(r, -EINVAL, offset,
           format("packet 0x%x (%s) at offset 0x%zx is out of CB boundary (%zu bytes, %zu left, user CB size 0x%zx)",
                  id, qman::opcode_name(op), offset, size, left, user_cb_size));
      return r;
    }
    switch (op) {
      case Opcode::MSG_PROT:
        fail(r, -EPERM, offset, not_allowed("MSG_PROT", id, offset));
        return r;
      case Opcode::CP_DMA:
        fail(r, -EPERM, offset, not_allowed("CP_DMA", id, offset));
        return r;
      case Opcode::STOP:
        fail(r, -EPERM, offset, not_allowed("STOP", id, offset));
        return r;
      case Opcode::WREG_BULK:
        fail(r, -EPERM, offset, not_allowed("WREG_BULK", id, offset));
        return r;
      case Opcode::LOAD_AND_EXE:
        if (dword0 & 1u) {  // cfg.dst = 1: load into the scalar register files
          fail(r, -EPERM, offset, not_allowed("Load and Execute (scalar mode, dst=1)", id, offset));
          return r;
        }
        break;
      case Opcode::LIN_DMA:
        r.contains_dma_pkt = true;
        break;
      case Opcode::WREG_32:
      case Opcode::MSG_LONG:
      case Opcode::MSG_SHORT:
      case Opcode::REPEAT:
      case Opcode::FENCE:
      case Opcode::NOP:
      case Opcode::ARB_POINT:
        break;
      case Opcode::WAIT:
      default:
        fail(r, -EINVAL, offset,
             format("Invalid packet header 0x%x (%s) at offset 0x%zx: not allowed on an external queue", id,
                    qman::opcode_name(op), offset));
        return r;
    }
    offset += size;
    ++r.packet_count;
  }

  // 3. Append NOP padding and the two completion MSG_PROTs.
  if (completion.append) {
    const size_t padding = total - user_cb_size - kCompletionPacketsSize;
    for (size_t i = 0; i < padding / qman::kHeaderSize; ++i) qman::encode(qman::Nop{}, r.patched);
    r.padding_bytes = padding;
    r.completion_offset = r.patched.size();

    qman::MsgProt cq;
    cq.value = completion.cq_entry;
    cq.addr = completion.cq_address;
    cq.barriers = qman::Barriers{r.contains_dma_pkt, false, true};
    qman::encode(cq, r.patched);

    qman::MsgProt msi;
    msi.value = completion.msi_value;
    msi.addr = completion.msi_address;
    msi.barriers = qman::kMbOnly;
    qman::encode(msi, r.patched);
  }
  return r;
}

int check_internal_cb(uint64_t address, uint64_t size, const InternalCbRanges& ranges, std::string* message) {
  if (inside_range(address, size, ranges.sram_user_base, ranges.sram_end) ||
      inside_range(address, size, ranges.dram_user_base, ranges.dram_end) ||
      inside_range(address, size, ranges.host_va_start, ranges.host_va_end)) {
    if (message) message->clear();
    return 0;
  }
  if (message) {
    const char* why = "";
    if (size == 0) {
      why = " (empty CB)";
    } else if (address + size < address) {
      why = " (address + size overflows)";
    }
    *message = format("CB address 0x%" PRIx64 " + 0x%" PRIx64 " for internal QMAN is not valid%s", address, size,
                      why);
  }
  return -EFAULT;
}

}  // namespace hpusim::driver
