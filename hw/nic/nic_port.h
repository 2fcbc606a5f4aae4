// One NIC port: a RoCE-v2-like engine with a register block in the CFG space (programmed by its
// QMAN, as a DMA core is) and a fabric master that reads send buffers and writes receive buffers,
// joined either to its peer port by a point-to-point link or to a switch port (NicSwitch), two
// TLM sockets either way.
//
// Software posts operations with register writes (PEER, ADDR_LO/HI, SIZE, COMP_WDATA,
// COMP_ADDR_LO/HI) and a COMMIT naming the operation: SEND moves SIZE bytes from ADDR to the peer;
// RECV names where the next SIZE bytes from the peer land (behind a switch PEER names the other
// port; a direct link ignores it). Sends and receives each run in commit order; the bytes of the
// sends fill the posted receives in order (a reliable-connection byte stream, per source), so a
// send may fill several receives and a receive may take several sends. A send completes when the
// destination has acknowledged its last packet; a receive when its last byte is written. With
// COMMIT.COMP_EN the operation then writes COMP_WDATA to COMP_ADDR (e.g. a sync-object increment).
//
// On the wire a send is packets of at most mtu_bytes of payload, each occupying the link for
// (payload + packet_overhead_bytes) at the line rate and arriving link latency after its last bit
// left. A packet leaves only with a credit for the far end's buffer, which returns (link latency
// later) once the packet has left that buffer, so a slow or absent receiver stalls the sender and
// nothing is lost. See README.md.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <deque>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "arch/regs/gaudi1_map.h"
#include "card_preset.pb.h"
#include "hw/cfg/cfg_space.h"
#include "hw/common/engine_status.h"
#include "hw/common/mem_protocol.h"
#include "hw/common/timed_writes.h"
#include "hw/dma/dma_port.h"
#include "hw/nic/nic_wire.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct NicPortConfig {
  std::string name;                 // sc_module name and messages ("nic3")
  uint32_t port = 0;                // port number on its card (informational)
  uint32_t gbps = 100;              // line rate, Gb/s (1e9 bits per second)
  uint32_t mtu_bytes = 8192;        // largest payload of a packet
  uint32_t packet_overhead_bytes = 82;   // wire bytes per packet beyond the payload
  Picoseconds latency_ps = 1000000; // from a packet's last bit leaving to its arrival at the peer
  uint32_t rx_buffer_packets = 16;  // packets the receive buffer holds: the peer's credits
  uint32_t tx_window_packets = 4;   // packets read from memory ahead of the wire
  uint32_t max_burst_bytes = 256;   // largest fabric read / write
  uint32_t queue_depth = 8;         // committed operations waiting, per direction
};

// Port `port` of `card`: the nic section (gbps_per_port, latency_ns, mtu_bytes,
// packet_overhead_bytes, rx_buffer_packets, tx_window_packets, queue_depth) and dma.max_burst_bytes.
NicPortConfig nic_port_config_from(const preset::Card& card, uint32_t port);

// The wire time of a packet of `payload` bytes (the overhead added) at `gbps`, in picoseconds.
Picoseconds nic_wire_ps(uint64_t payload, const NicPortConfig& config);

enum class NicOp : uint8_t { Send = 1, Recv = 2 };

struct NicOperation {
  uint64_t id = 0;                  // per port and direction, 1, 2, ... in commit order
  NicOp op = NicOp::Send;
  uint32_t peer = 0;                // behind a switch: a send's destination, a receive's source
  uint64_t address = 0;
  uint64_t bytes = 0;
  bool completion = false;
  uint64_t completion_address = 0;
  uint32_t completion_data = 0;
  Picoseconds committed_ps = 0;
};

struct NicObserver {
  virtual ~NicObserver() = default;
  // A packet of `payload` bytes occupied the wire from `start` to `end`.
  virtual void packet_sent(uint32_t port, uint64_t payload, Picoseconds start, Picoseconds end) {
    (void)port, (void)payload, (void)start, (void)end;
  }
  // An operation completed (its completion message answered, if it had one).
  virtual void operation_done(uint32_t port, const NicOperation& op, Picoseconds at) {
    (void)port, (void)op, (void)at;
  }
  // An operation failed (a fabric error; ERR_CAUSE holds the bit). No completion message.
  virtual void operation_failed(uint32_t port, const NicOperation& op, const std::string& message, Picoseconds at) {
    (void)port, (void)op, (void)message, (void)at;
  }
};

struct NicPortStats {
  uint64_t commits = 0;
  uint64_t overflows = 0;           // COMMIT with that direction's queue full: dropped
  uint64_t sends = 0, recvs = 0;    // completed
  uint64_t failed = 0;
  uint64_t tx_packets = 0, tx_bytes = 0, tx_wire_bytes = 0;   // payload / payload + overhead
  uint64_t rx_packets = 0, rx_bytes = 0;
  uint64_t tx_busy_ps = 0;          // time the wire carried this port's packets
  uint64_t credit_stall_ps = 0;     // a packet ready, no credit
  uint64_t completion_messages = 0;
  Picoseconds first_tx_ps = 0, last_tx_ps = 0;   // the first packet's start, the last one's end
};

class NicPort : public sc_core::sc_module, public RegisterBlock, public EngineStatus, private DmaPort::Client {
 public:
  // Register offsets of the block (arch/regs regs::nic_port; README.md).
  static constexpr uint32_t kCfg = regs::nic_port::kCfg, kStatus = regs::nic_port::kStatus,
                            kErrCause = regs::nic_port::kErrCause;
  static constexpr uint32_t kAddrLo = regs::nic_port::kAddrLo, kAddrHi = regs::nic_port::kAddrHi,
                            kSize = regs::nic_port::kSize;
  static constexpr uint32_t kCompAddrLo = regs::nic_port::kCompAddrLo, kCompAddrHi = regs::nic_port::kCompAddrHi,
                            kCompWdata = regs::nic_port::kCompWdata;
  static constexpr uint32_t kCommit = regs::nic_port::kCommit, kNonSecureProps = regs::nic_port::kNonSecureProps,
                            kPeer = regs::nic_port::kPeer;
  static constexpr uint32_t kCommitCompEn = regs::nic_port::kCommitCompEn;
  static constexpr uint32_t kCommitOpShift = regs::nic_port::kCommitOpShift, kCommitOpMask = regs::nic_port::kCommitOpMask;
  static constexpr uint32_t kErrReadFailed = regs::nic_port::kErrReadFailed, kErrWriteFailed = regs::nic_port::kErrWriteFailed,
                            kErrCompletionFailed = regs::nic_port::kErrCompletionFailed,
                            kErrQueueOverflow = regs::nic_port::kErrQueueOverflow, kErrBadCommit = regs::nic_port::kErrBadCommit;
  static constexpr uint64_t size_bytes() { return 0x1000; }

  // Throws std::invalid_argument for a bad configuration.
  explicit NicPort(const NicPortConfig& config);

  DmaPort& bus() { return bus_; }
  // The link: this port's packets and credits go out on `tx` to the peer's `rx`.
  tlm_utils::simple_initiator_socket_optional<NicPort> tx;
  tlm_utils::simple_target_socket_optional<NicPort> rx;
  // Joins two ports (both directions). A port without a peer never gets a credit: its sends wait.
  static void connect(NicPort& a, NicPort& b);
  bool connected() const { return peer_ != nullptr || switched_ || remote_; }
  // Joined to a port simulated elsewhere (another process) through `tx` and `rx` (NicRemoteEnd
  // binds them): the far port's address and its receive buffer (this port's credits).
  void mark_remote(uint32_t peer_address, uint32_t peer_rx_buffer_packets);
  bool remote() const { return remote_; }
  // The port's address in its box (nic_address: what a switch routes by and a peer names).
  void set_address(uint32_t address) { address_ = address; }
  uint32_t address() const { return address_; }
  // Joined to a switch port (NicSwitch::attach) whose input buffer holds `credits` packets: the
  // port's operations then name their peer (PEER register).
  void attach_to_switch(uint32_t credits);

  bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
  bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;

  bool engine_idle() const override;
  const sc_core::sc_event& engine_idle_event() const override { return idle_event_; }
  uint32_t engine_room() const override;
  const sc_core::sc_event& engine_room_event() const override { return room_event_; }

  uint32_t non_secure_props() const { return regs_[kNonSecureProps / 4]; }
  void set_observer(NicObserver* observer) { observer_ = observer; }
  const NicPortConfig& config() const { return config_; }
  NicPortStats stats() const;
  void register_stats(stats::Scope scope);
  // Credits this port holds now (packets the peer's receive buffer can still take).
  uint32_t credits() const { return credits_; }

  // Modelled hard reset at the current simulation time: registers to their reset values (EN = 0),
  // queued and running operations dropped without completion messages (accesses already in the
  // fabric complete and are discarded), received packets (and those still on the wire to it)
  // dropped with their credits returned to the peer. On a direct link the connection starts again:
  // the port tells its peer (a Reset on the wire), which drops what it holds of the port's older
  // packets, and credits and acknowledgements of the older connection are ignored. Statistics are
  // kept.
  void reset();

 private:
  enum AccessKind : uint32_t { kPayloadRead = 1, kPayloadWrite, kCompletionWrite };
  struct TxPacket {             // a send's packet being read from memory
    uint64_t send_id = 0;
    uint64_t offset = 0;        // in the send
    uint32_t bytes = 0;
    uint32_t reads_left = 0;
    bool failed = false;
    std::vector<unsigned char> payload;
  };
  struct RxPacket {             // a received packet in the receive buffer
    uint64_t send_id = 0;
    uint32_t source = 0;
    std::vector<unsigned char> payload;
    uint64_t placed = 0;        // bytes handed to receives
    uint32_t writes_left = 0;
    uint32_t epoch = 0;         // the sender's connection epoch
    bool stale = false;         // its sender was reset while it was written: no credit, no acknowledgement
  };
  // A packet, a credit or an acknowledgement on its way to this port.
  struct Arrival {
    Picoseconds at;
    uint64_t seq;
    NicHeader::Kind kind;
    uint64_t send_id;
    RxPacket* packet;           // data only
    uint32_t source;
    uint32_t epoch;
    bool dropped;               // data on the wire when this port was reset
    bool operator>(const Arrival& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  NicPort(sc_core::sc_module_name name, const NicPortConfig& config);
  void apply_due();                 // SC_METHOD: register writes at their time
  void apply(uint32_t offset, uint32_t value, Picoseconds at);
  void commit(uint32_t value, Picoseconds at);
  void transmitter();               // SC_THREAD: sends' packets onto the wire
  void fill_window();
  void arrive();                    // SC_METHOD: packets and credits due now
  void place();                     // received bytes into the posted receives
  void access_done(DmaPort::Access& access) override;
  void finish_send(uint64_t id);
  void finish_recv(uint64_t id);
  // The operation is done: its completion message (if any, and it did not fail), then the observer.
  void complete(const NicOperation& op, bool failed, const std::string& message);
  // The link's far end may send one more packet; the data's source that its packet is written.
  void send_credit(uint32_t epoch);
  void send_ack(uint32_t source, uint64_t send_id, uint32_t epoch);
  void send_control(NicHeader::Kind kind, uint32_t dest, uint64_t send_id, uint32_t epoch);
  // A Reset from `source`: its packets of older connections are dropped.
  void peer_reset(uint32_t source, uint32_t epoch);
  // A received packet is written: its credit and acknowledgement go back, and it is freed.
  void packet_written(RxPacket* packet);
  // The receives a packet from `source` fills: its own queue behind a switch, the one queue of a
  // direct link.
  uint32_t recv_key(uint32_t source) const { return switched_ ? source : kAnySource; }
  static constexpr uint32_t kAnySource = 0xFFFFFFFF;
  // Completes the receives at the front of `queue` whose bytes are all handed out.
  void pop_filled(std::deque<NicOperation>& queue, uint64_t& filled);
  void notify_if_idle();
  tlm::tlm_sync_enum receive(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);

  NicPortConfig config_;
  DmaPort bus_;
  NicObserver* observer_ = nullptr;
  NicPort* peer_ = nullptr;
  bool remote_ = false;                     // the peer is in another process
  uint32_t remote_address_ = 0;
  bool switched_ = false;
  uint32_t address_ = 0;
  std::vector<uint32_t> regs_;
  TimedWrites<> pending_{[this](const RegisterWrite& w, Picoseconds at) {
                           apply(static_cast<uint32_t>(w.offset), w.value, at);
                         },
                         {/*apply_if_due_and_idle=*/false, /*notify_earliest=*/true,
                          /*queue_while_applying=*/false}};

  // Sending.
  std::deque<NicOperation> sends_;          // committed, not yet fully on the wire (front: current)
  uint64_t send_offset_ = 0;                // of sends_.front(): bytes handed to packets
  bool send_has_packet_ = false;            // sends_.front() has put out at least one packet
  std::deque<TxPacket> window_;             // packets being read or ready, in order
  struct SendState {
    NicOperation op;
    uint64_t in_flight = 0;     // packets on the wire or not yet acknowledged
    bool all_sent = false;      // its last packet has left (or was dropped)
    bool failed = false;
  };
  std::map<uint64_t, SendState> unacked_;
  uint32_t credits_ = 0;
  uint32_t initial_credits_ = 0;            // the far end's receive buffer
  uint32_t connection_ = 0;                 // this port's connection epoch, bumped by reset()
  std::map<uint32_t, uint32_t> peer_connection_;   // the newest epoch each source announced
  uint32_t stale_writing_ = 0;              // packets of writing_ whose sender was reset
  Picoseconds wire_free_ps_ = 0;
  sc_core::sc_event tx_event_;              // work, read data or a credit arrived

  // Receiving.
  std::map<uint32_t, std::deque<NicOperation>> recvs_;   // by source key: committed, not yet filled
  std::map<uint32_t, uint64_t> recv_filled_;              // bytes handed to each queue's front
  struct RecvState {
    NicOperation op;
    uint64_t writes = 0;        // payload writes in flight
    bool filled = false;        // every byte handed out
    bool failed = false;
  };
  std::map<uint64_t, RecvState> filling_;
  std::deque<RxPacket*> rx_buffer_;         // arrived, not fully placed (front first)
  std::vector<Arrival> arrivals_;           // min-heap: packets on their way to this port
  uint64_t arrival_seq_ = 0;
  sc_core::sc_event arrival_event_;

  uint64_t next_send_id_ = 1, next_recv_id_ = 1;
  std::map<uint64_t, NicOperation> completing_;   // completion messages in flight, by access
  std::set<RxPacket*> writing_;             // placed packets whose writes are in flight
  uint32_t epoch_ = 0;                      // bumped by reset(): accesses of older epochs are discarded
  uint64_t next_completion_ = 1;
  tlm::tlm_generic_payload wire_;           // the transaction this port puts on its link
  sc_core::sc_event idle_event_, room_event_;
  NicPortStats stats_;
};

}  // namespace hpusim::hw
