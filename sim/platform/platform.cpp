#include "sim/platform/platform.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <thread>
#include <stdexcept>

#include "arch/uapi/uapi.h"
#include "hw/card/card.h"
#include "hw/card/card_tracer.h"
#include "hw/nic/nic_port.h"
#include "hw/nic/nic_remote_end.h"
#include "hw/nic/nic_switch.h"
#include "hw/pcie/host_memory.h"
#include "sim/cosim/host_port.h"
#include "sim/distributed/conservative_sync.h"
#include "sim/platform/card_link.h"
#include "traces/timeline.h"

namespace hpusim::platform {
namespace {

std::atomic<Platform*> g_current{nullptr};

cosim::HostCostsNs link_costs(const preset::HostCosts& host) {
  cosim::HostCostsNs costs;
  costs.mmio_write_ns = host.mmio_write_ns();
  costs.mmio_read_ns = host.mmio_read_ns();
  costs.irq_latency_ns = host.irq_latency_ns();
  return costs;
}

// Card i's driver gets bus addresses in the i-th of kMaxCards equal windows above the first 4 GB
// (below it: the MSI window and what firmware and BIOS keep).
CardLinkConfig card_link_config(const preset::Card& preset, unsigned card) {
  constexpr uint64_t kLowReserved = 1ull << 32;
  constexpr uint64_t kGranule = 1ull << 20;
  const auto& map = preset.memory_map();
  const uint64_t window = (map.host_phys_size() - kLowReserved) / Platform::kMaxCards / kGranule * kGranule;
  CardLinkConfig config;
  config.host_window_base = map.host_phys_base();
  config.bus_window_start = kLowReserved + card * window;
  config.bus_window_end = config.bus_window_start + window;
  config.costs = preset.host();
  return config;
}

}  // namespace

Platform::Platform(const PlatformOptions& options) : options_(options) {
  if (options_.cards == 0 || options_.cards > kMaxCards) {
    throw std::invalid_argument("platform: cards = " + std::to_string(options_.cards) + ": a box has 1 to " +
                                std::to_string(kMaxCards) + " cards");
  }
  if (!options_.box.empty()) {
    preset_ = options_.resolved_preset ? *options_.resolved_preset
                                       : preset::load_preset(preset::box_card_preset(options_.box), options_.overrides);
    box_ = preset::load_box(options_.box, preset_);
    if (options_.cards == 1) {
      options_.cards = box_->cards();
    } else if (options_.cards > box_->cards()) {
      throw std::invalid_argument("platform: cards = " + std::to_string(options_.cards) + ": box '" + options_.box +
                                  "' has " + std::to_string(box_->cards()));
    }
  } else {
    preset_ = options_.resolved_preset ? *options_.resolved_preset : preset::load_preset(options_.preset, options_.overrides);
  }
  if (options_.distributed && !box_) throw std::invalid_argument("platform: a simulation split between processes needs a box");
  box_cards_ = options_.cards;
  Platform* expected = nullptr;
  if (!g_current.compare_exchange_strong(expected, this)) {
    throw std::runtime_error("platform: this process already has one (SystemC elaborates once per process)");
  }
  try {
    if (options_.distributed && !options_.rendezvous.empty()) {
      const size_t colon = options_.rendezvous.rfind(':');
      char* end = nullptr;
      const unsigned long port = colon == std::string::npos ? 0 : std::strtoul(options_.rendezvous.c_str() + colon + 1, &end, 10);
      if (colon == std::string::npos || colon == 0 || end == nullptr || *end != '\0' || port == 0 || port > 65535) {
        throw std::invalid_argument("platform: rendezvous '" + options_.rendezvous + "': host:port");
      }
      sync_ = std::make_unique<distributed::ConservativeSync>(distributed::tcp_transport(
          options_.rank, options_.ranks, options_.rendezvous.substr(0, colon), static_cast<uint16_t>(port),
          options_.rendezvous_timeout_s));
    } else if (options_.distributed) {
      int initialised = 0;
      MPI_Initialized(&initialised);
      if (!initialised) {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
        owns_mpi_ = true;
      }
      int level = 0;
      MPI_Query_thread(&level);
      if (level < MPI_THREAD_SERIALIZED) {
        throw std::runtime_error("platform: MPI was initialised for one thread; the simulation thread uses it too "
                                 "(MPI_Init_thread with MPI_THREAD_SERIALIZED or more, or let the platform initialise it)");
      }
      sync_ = std::make_unique<distributed::ConservativeSync>();
    }
    if (sync_) {
      process_rank_ = sync_->rank();
      const unsigned processes = static_cast<unsigned>(sync_->ranks()), me = static_cast<unsigned>(sync_->rank());
      if (processes > box_cards_) {
        throw std::invalid_argument("platform: " + std::to_string(processes) + " processes share a box of " +
                                    std::to_string(box_cards_) + " cards (at most one process per card)");
      }
      first_card_ = me * box_cards_ / processes;
      options_.cards = (me + 1) * box_cards_ / processes - first_card_;
    }
    if (options_.timeline != nullptr) {
      timeline_ = options_.timeline;
    } else {
      // Without a trace file the timeline exists but records nothing until a profiler asks.
      own_timeline_ = std::make_unique<traces::Timeline>();
      timeline_ = own_timeline_.get();
      timeline_->set_recording(!options_.trace_path.empty());
    }
    if (timeline_ != nullptr && options_.trace_packets) timeline_->set_packets(true);
    cosim_ = std::make_unique<cosim::CoSimulation>(options_.time_source, link_costs(preset_.host()));
    const bool box = box_cards_ > 1;
    // Names carry the card's index in the box (a split box's processes name their cards alike).
    const auto indexed = [this, box](const std::string& name, unsigned i) {
      return box ? name + std::to_string(first_card_ + i) : name;
    };
    // What the BIOS and PCIe enumeration provide: one host memory, each card, its root port and
    // the MSI routing.
    const auto& map = preset_.memory_map();
    host_memory_ = std::make_unique<hw::HostMemory>("host_memory", map.host_phys_size());
    cosim_->on_sim_thread([&] {
      for (unsigned i = 0; i < options_.cards; ++i) {
        hw::CardOptions card_options;
        card_options.device_cpu = options_.with_driver;
        // The firmware zeroes the driver-reserved head of SRAM at boot; nothing of the driver lives there.
        card_options.fw_init_region_base = preset_.memory_map().sram_base();
        card_options.fw_init_region_bytes = uapi::GAUDI_DRIVER_SRAM_RESERVED_SIZE_FROM_START;
        card_options.stats = &stats_;
        card_options.stats_prefix = box ? indexed("card", i) : "";
        card_options.host_memory = host_memory_.get();
        cards_.push_back(std::make_unique<hw::Card>(indexed("card", i).c_str(), preset_, card_options));
        hw::Card& card = *cards_.back();
        if (timeline_ != nullptr) {
          card_tracers_.push_back(std::make_unique<hw::CardTracer>(*timeline_, card, box ? std::to_string(first_card_ + i) : ""));
        }
        host_ports_.push_back(std::make_unique<cosim::HostPort>(indexed("host", i).c_str()));
        cosim::HostPort* port = host_ports_.back().get();
        port->socket.bind(card.memory().pcie().host_side);
        card.memory().pcie().msi().bind(*port, kMsiHostAddress);
        if (options_.on_card_built) options_.on_card_built(card);
      }
      if (box_) build_links();
    });
    for (unsigned i = 0; i < options_.cards; ++i) {
      cosim_->attach(*host_ports_[i]);
      links_.push_back(std::make_unique<CardLink>(*cosim_, *cards_[i], *host_ports_[i], *host_memory_,
                                                  card_link_config(preset_, i)));
    }
    if (options_.with_driver) {
      probe_drivers();
      for (unsigned i = 0; i < options_.cards; ++i) {
        if (const int rc = driver::register_device_file(i, drivers_[i].get()); rc != 0) {
          for (unsigned j = 0; j < i; ++j) driver::unregister_device_file(j);
          drivers_.clear();
          throw std::runtime_error("platform: " + device_path(i) + " is taken (" + std::to_string(rc) + ")");
        }
      }
    }
    if (sync_) join_processes();
    set_host_services(this);
  } catch (...) {
    if (sync_) {
      // The other processes may be waiting for this one in a collective: end the whole run.
      std::string why = "an unknown error";
      try {
        throw;
      } catch (const std::exception& e) {
        why = e.what();
      } catch (...) {
      }
      std::fprintf(stderr, "hpusim: process %d of a split box: %s; ending the %s run\n", sync_->rank(), why.c_str(),
                   sync_->transport().name());
      sync_->transport().abort();
    }
    tear_down();
    g_current = nullptr;
    throw;
  }
}

// The box's links between the cards built (before elaboration ends: they are sockets): joined
// directly, or, for a split box, through a remote end to the process that simulates the far card.
void Platform::build_links() {
  const auto local = [this](unsigned card) { return card >= first_card_ && card < first_card_ + cards_.size(); };
  for (unsigned c = 0; c < cards_.size(); ++c)
    for (unsigned p = 0; p < cards_[c]->nic_ports(); ++p) cards_[c]->nic_port(p)->set_address(hw::nic_address(first_card_ + c, p));
  const auto port = [this](const preset::NicEnd& end) { return cards_[end.card() - first_card_]->nic_port(end.port()); };
  const auto owner = [this](unsigned card) {
    const unsigned processes = static_cast<unsigned>(sync_->ranks());
    unsigned r = 0;
    while (r + 1 < processes && (r + 1) * box_cards_ / processes <= card) ++r;
    return static_cast<int>(r);
  };
  // The scale-out switch, with the ports of the cards in the run; in a split box it lives in the
  // process of the first such card, joined to the others' ports through remote ends (link ids
  // after the box's links). Cross-process messages through it take at least the cable's latency
  // (switch to port) or the port's (port to switch).
  std::vector<int> scale_out;   // indices into box_->scale_out()
  for (int i = 0; i < box_->scale_out_size(); ++i)
    if (box_->scale_out(i).card() < box_cards_) scale_out.push_back(i);
  if (box_->has_switch_() && !scale_out.empty()) {
    const preset::SwitchConfig& s = box_->switch_();
    const int switch_process = sync_ ? owner(box_->scale_out(scale_out[0]).card()) : 0;
    const uint64_t switch_link_ps = uint64_t{s.link_latency_ns()} * 1000;
    const uint64_t port_ps = uint64_t{preset_.nic().latency_ns()} * 1000;
    if (!sync_ || sync_->rank() == switch_process) {
      hw::NicSwitchConfig config;
      config.ports = static_cast<uint32_t>(scale_out.size());
      config.gbps = s.gbps_per_port();
      config.packet_overhead_bytes = preset_.nic().packet_overhead_bytes();
      config.latency_ps = uint64_t{s.latency_ns()} * 1000;
      config.link_latency_ps = switch_link_ps;
      config.buffer_packets = s.buffer_packets();
      switch_ = std::make_unique<hw::NicSwitch>(config);
      switch_->register_stats(stats::Scope(stats_, "switch"));
    }
    for (unsigned i = 0; i < scale_out.size(); ++i) {
      const preset::NicEnd& end = box_->scale_out(scale_out[i]);
      const uint32_t link = static_cast<uint32_t>(box_->link_size() + scale_out[i]);
      const auto remote_end = [&] {
        remote_ends_.push_back(std::make_unique<hw::NicRemoteEnd>(("remote_link" + std::to_string(link)).c_str(), link));
        remote_link_ps_ = std::min({remote_link_ps_, switch_link_ps, port_ps});
        return remote_ends_.back().get();
      };
      if (switch_ && local(end.card())) {
        switch_->attach(*port(end), i);
      } else if (switch_) {   // a port of another process's card
        hw::NicRemoteEnd* far = remote_end();
        switch_->attach_remote(*far, hw::nic_address(end.card(), end.port()), preset_.nic().rx_buffer_packets(), i);
        sync_->add(*far, owner(end.card()));
      } else if (local(end.card())) {   // this card's port, the switch in another process
        hw::NicRemoteEnd* far = remote_end();
        far->attach_to_switch(*port(end), s.buffer_packets());
        sync_->add(*far, switch_process);
      }
    }
  }
  for (int k = 0; k < box_->link_size(); ++k) {
    const preset::NicLink& link = box_->link(k);
    if (link.a().card() >= box_cards_ || link.b().card() >= box_cards_) continue;   // a card not in the run
    const bool a = local(link.a().card()), b = local(link.b().card());
    if (a && b) {
      hw::NicPort::connect(*port(link.a()), *port(link.b()));
    } else if ((a || b) && sync_) {
      const preset::NicEnd& near = a ? link.a() : link.b();
      const preset::NicEnd& far = a ? link.b() : link.a();
      hw::NicPort& nic = *port(near);
      remote_ends_.push_back(std::make_unique<hw::NicRemoteEnd>(("remote_link" + std::to_string(k)).c_str(), static_cast<uint32_t>(k)));
      remote_ends_.back()->attach(nic, hw::nic_address(far.card(), far.port()), nic.config().rx_buffer_packets);
      sync_->add(*remote_ends_.back(), owner(far.card()));
      remote_link_ps_ = std::min(remote_link_ps_, nic.config().latency_ps);
    }
  }
}

// A split box: the processes agree on the lookahead (the latency of their links to each other)
// and on when the windows start: when the last card of the box is up, as in one process.
void Platform::join_processes() {
  const uint64_t latency = remote_link_ps_;
  const uint64_t up = std::max(cosim_->host_now_ps(), cosim_->device_now_ps());
  const uint64_t base = cosim_->on_sim_thread([&] { return sync_->start(latency, up); });
  cosim_->set_device_runner(sync_.get());
  cosim_->host_wait_until(base);
}

void Platform::leave_at_exit() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised) {
    if (sync_ && !sync_->finished()) {
      std::fprintf(stderr, "hpusim: process %d of a split box: the program ended MPI before this process left the run; "
                           "the other processes may wait for it\n", sync_->rank());
    }
    return;
  }
  leave_reporting_errors();
  end_mpi();
}

void Platform::leave_reporting_errors() {
  try {
    leave();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpusim: process %d of a split box could not leave the run: %s\n", process_rank_, e.what());
  }
}

void Platform::end_mpi() {
  if (sync_) {
    cosim_->set_device_runner(nullptr);
    sync_.reset();   // its communicator goes before MPI does
  }
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (owns_mpi_ && !finalised) MPI_Finalize();
}

void Platform::leave() {
  if (!sync_ || sync_->finished() || sync_->lookahead() == 0) return;
  cosim_->on_sim_thread([this] { sync_->leave(); });
}

Platform::~Platform() {
  set_host_services(nullptr);
  tear_down();
  end_mpi();
  g_current = nullptr;
}

// The drivers probe their cards. In a box each probe runs on its own thread and host-time track
// from the same start, as the kernel probes devices in parallel, so a card comes up exactly as it
// would alone; the host goes on once all are up.
void Platform::probe_drivers() {
  const bool box = box_cards_ > 1;
  auto probe = [this, box](unsigned i) {
    driver::HlDeviceOptions driver_options = options_.driver;
    driver_options.timeline = timeline_;
    if (driver_options.cs_timeout_us == 0) driver_options.cs_timeout_us = uint64_t{preset_.driver().tdr_timeout_ms()} * 1000;
    if (box) driver_options.trace_process = "host: driver " + std::to_string(first_card_ + i);
    if (box) driver_options.card_label = std::to_string(first_card_ + i);   // as its CardTracer's
    return std::make_unique<driver::HlDevice>(*links_[i], driver_options);
  };
  drivers_.resize(options_.cards);
  if (!box) {
    drivers_[0] = probe(0);
    return;
  }
  std::vector<unsigned> tracks;
  for (unsigned i = 0; i < options_.cards; ++i) tracks.push_back(reserve_host_track("card " + std::to_string(first_card_ + i) + " probe"));
  std::vector<std::exception_ptr> failures(options_.cards);
  std::vector<std::thread> probes;
  for (unsigned i = 0; i < options_.cards; ++i) {
    probes.emplace_back([&, i] {
      try {
        const HostThread on(*this, tracks[i]);
        drivers_[i] = probe(i);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    });
  }
  for (auto& t : probes) t.join();
  for (const auto& failure : failures) {
    if (failure) {
      drivers_.clear();
      std::rethrow_exception(failure);
    }
  }
  uint64_t all_up = 0;
  for (const unsigned track : tracks) all_up = std::max(all_up, cosim_->track_now_ps(track));
  cosim_->host_wait_until(all_up);
}

void Platform::tear_down() {
  for (unsigned i = 0; i < drivers_.size(); ++i) driver::unregister_device_file(i);
  drivers_.clear();
  links_.clear();
  if (cosim_ && sync_) {
    leave_reporting_errors();   // after the drivers: closing a card may still touch it
    cosim_->set_device_runner(nullptr);
  }
  if (cosim_) {
    cosim_->on_sim_thread([this] {
      remote_ends_.clear();
      card_tracers_.clear();
      switch_.reset();
      cards_.clear();
      host_ports_.clear();
    });
  }
}

Platform* Platform::current() { return g_current.load(); }

hw::Card& Platform::card(unsigned index) {
  if (index >= cards_.size()) throw std::out_of_range("platform: no card " + std::to_string(index));
  return *cards_[index];
}

driver::HlDevice& Platform::driver(unsigned index) {
  if (index >= cards_.size()) throw std::out_of_range("platform: no card " + std::to_string(index));
  if (drivers_.empty()) throw std::logic_error("platform: built without a driver");
  return *drivers_[index];
}

HostThread::HostThread(Platform& platform, const std::string& name, uint64_t start_ps)
    : HostThread(platform, platform.reserve_host_track(name, start_ps)) {}

HostThread::HostThread(Platform& platform, unsigned track) : platform_(platform), track_(track) {
  platform_.cosim().bind_thread(track_);
}

HostThread::~HostThread() {
  if (platform_.cosim().current_track() == track_) platform_.cosim().unbind_thread();
}

void Platform::charge(HostWork work, uint64_t count) {
  const preset::HostCosts& host = preset_.host();
  uint64_t ns = 0;
  switch (work) {
    case HostWork::kGraphHashPerNode: ns = host.graph_hash_per_node_ns(); break;
    case HostWork::kRecipeLookup: ns = host.recipe_lookup_ns(); break;
    case HostWork::kCompilePerNode: ns = host.compile_per_node_ns(); break;
    case HostWork::kLaunch: ns = host.launch_ns(); break;
    case HostWork::kLaunchPerPatch: ns = host.launch_per_patch_ns(); break;
    case HostWork::kOpRecord: ns = host.op_record_ns(); break;
    case HostWork::kEagerOp: ns = host.eager_op_ns(); break;
    case HostWork::kGraphBuildPerNode: ns = host.graph_build_per_node_ns(); break;
    case HostWork::kCpuFallbackOp: ns = host.cpu_fallback_op_ns(); break;
    case HostWork::kGraphReplay: ns = host.graph_replay_ns(); break;
  }
  if (ns * count != 0) cosim_->charge_ns(ns * count);
}

void Platform::write_trace() {
  if (timeline_ == nullptr || options_.trace_path.empty()) return;
  std::lock_guard<std::mutex> lock(timeline_->mutex());
  std::string path = options_.trace_path;
  if (process_rank_ >= 0) {   // each process of a split box writes its own: name.rank<r>.json
    const size_t dot = path.find_last_of('.');
    const size_t slash = path.find_last_of('/');
    const std::string tag = ".rank" + std::to_string(process_rank_);
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) path += tag;
    else path.insert(dot, tag);
  }
  const bool json = path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (json) {
    timeline_->writer().write_chrome_json(path);
  } else {
    timeline_->writer().write_perfetto(path);
  }
}

std::string Platform::box_text() {
  if (!box_) return "";
  preset::Box built = *box_;
  built.clear_link();
  built.clear_scale_out();
  // Every card of the box, built here or (a split box) by another process.
  const auto on_card_built = [&](const preset::NicEnd& end) { return end.card() < box_cards_; };
  for (const preset::NicLink& link : box_->link()) {
    if (on_card_built(link.a()) && on_card_built(link.b())) *built.add_link() = link;
  }
  for (const preset::NicEnd& end : box_->scale_out()) {
    if (on_card_built(end)) *built.add_scale_out() = end;
  }
  built.set_cards(box_cards_);
  return preset::to_text(built);
}

std::string Platform::accepts(const BootRequest& request) {
  // No preset and no overrides: whatever card is there. Overrides alone apply to the default preset.
  const bool any_card = request.preset.empty() && request.overrides.empty();
  const std::string preset = request.preset.empty() ? preset::kDefaultPreset : request.preset;
  if (!any_card && (preset != options_.preset || request.overrides != options_.overrides)) {
    const auto described = [](const std::string& name, const std::vector<std::string>& overrides) {
      std::string text = "preset '" + name + "'";
      for (const std::string& o : overrides) text += " --set " + o;
      return text;
    };
    return "this process runs a card built from " + described(options_.preset, options_.overrides) +
           "; another, from " + described(preset, request.overrides) + ", cannot be built (one platform per process)";
  }
  if (!request.box.empty() && request.box != options_.box) {
    return "this process runs " + (options_.box.empty() ? std::string("no box") : "box '" + options_.box + "'") +
           "; box '" + request.box + "' cannot be built (one platform per process)";
  }
  if (request.cards != 0 && request.cards != box_cards_) {
    return "this process runs a box of " + std::to_string(box_cards_) + (box_cards_ == 1 ? " card" : " cards") + "; one of " +
           std::to_string(request.cards) + " cannot be built (one platform per process)";
  }
  if (request.distributed && !options_.distributed) {
    return "this process runs its box alone; HPUSIM_DISTRIBUTED asks for one split between the processes of an MPI "
           "run (one platform per process)";
  }
  if (!request.host_time.empty() && request.host_time != cosim::to_string(options_.time_source)) {
    return std::string("this process's host clock is ") + cosim::to_string(options_.time_source) + "; a " +
           request.host_time + " one cannot be started (one platform per process)";
  }
  if (drivers_.empty()) return "this process's platform has no driver";
  if (!request.trace_path.empty() && request.trace_path != options_.trace_path) {
    if (timeline_ == nullptr) return "tracing must be asked for before the platform is built (hpusim_traceToFile first)";
    options_.trace_path = request.trace_path;
    std::lock_guard<std::mutex> lock(timeline_->mutex());
    timeline_->set_recording(true);   // from now on
  }
  return "";
}

}  // namespace hpusim::platform
