#include "sim/platform/platform.h"

#include <atomic>
#include <iostream>
#include <stdexcept>

#include "arch/uapi/uapi.h"
#include "hw/card/card.h"
#include "hw/card/card_tracer.h"
#include "sim/cosim/host_port.h"
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

}  // namespace

Platform::Platform(const PlatformOptions& options) : options_(options) {
  if (options_.cards != 1) {
    throw std::invalid_argument("platform: cards = " + std::to_string(options_.cards) +
                                ": a box of more than one card is not built yet (cards must be 1)");
  }
  preset_ = options_.resolved_preset ? *options_.resolved_preset : preset::load_preset(options_.preset, options_.overrides);
  Platform* expected = nullptr;
  if (!g_current.compare_exchange_strong(expected, this)) {
    throw std::runtime_error("platform: this process already has one (SystemC elaborates once per process)");
  }
  try {
    if (options_.timeline != nullptr) {
      timeline_ = options_.timeline;
    } else if (!options_.trace_path.empty()) {
      own_timeline_ = std::make_unique<traces::Timeline>();
      timeline_ = own_timeline_.get();
    }
    cosim_ = std::make_unique<cosim::CoSimulation>(options_.time_source, link_costs(preset_.host()));
    // What the BIOS and PCIe enumeration provide: the card, the root port and the MSI routing.
    cosim_->on_sim_thread([this] {
      hw::CardOptions card_options;
      card_options.device_cpu = options_.with_driver;
      // The firmware zeroes the driver-reserved head of SRAM at boot; nothing of the driver lives there.
      card_options.fw_init_region_base = preset_.memory_map().sram_base();
      card_options.fw_init_region_bytes = uapi::GAUDI_DRIVER_SRAM_RESERVED_SIZE_FROM_START;
      card_ = std::make_unique<hw::Card>("card", preset_, card_options);
      if (timeline_ != nullptr) card_tracer_ = std::make_unique<hw::CardTracer>(*timeline_, *card_);
      host_port_ = std::make_unique<cosim::HostPort>("host");
      host_port_->socket.bind(card_->memory().pcie().host_side);
      cosim::HostPort* port = host_port_.get();
      card_->memory().pcie().set_msi_sink(kMsiHostAddress, [port](uint32_t vector, hw::Picoseconds at) {
        port->deliver_msi(vector, at);
      });
      if (options_.on_card_built) options_.on_card_built(*card_);
    });
    cosim_->attach(*host_port_);
    link_ = std::make_unique<CardLink>(*cosim_, *card_);
    if (options_.with_driver) {
      driver::HlDeviceOptions driver_options = options_.driver;
      driver_options.timeline = timeline_;
      driver_ = std::make_unique<driver::HlDevice>(*link_, preset_, driver_options);
      if (const int rc = driver::register_device_file(0, driver_.get()); rc != 0) {
        throw std::runtime_error("platform: " + device_path(0) + " is taken (" + std::to_string(rc) + ")");
      }
    }
    set_host_services(this);
  } catch (...) {
    driver_.reset();
    if (cosim_) {
      cosim_->on_sim_thread([this] {
        card_tracer_.reset();
        card_.reset();
        host_port_.reset();
      });
    }
    g_current = nullptr;
    throw;
  }
}

Platform::~Platform() {
  set_host_services(nullptr);
  if (driver_) {
    driver::unregister_device_file(0);
    driver_.reset();
  }
  link_.reset();
  cosim_->on_sim_thread([this] {
    card_tracer_.reset();
    card_.reset();
    host_port_.reset();
  });
  g_current = nullptr;
}

Platform* Platform::current() { return g_current.load(); }

hw::Card& Platform::card(unsigned index) {
  if (index != 0) throw std::out_of_range("platform: no card " + std::to_string(index));
  return *card_;
}

driver::HlDevice& Platform::driver(unsigned index) {
  if (index != 0) throw std::out_of_range("platform: no card " + std::to_string(index));
  if (!driver_) throw std::logic_error("platform: built without a driver");
  return *driver_;
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
  }
  if (ns * count != 0) cosim_->charge_ns(ns * count);
}

void Platform::write_trace() {
  if (timeline_ == nullptr || options_.trace_path.empty()) return;
  std::lock_guard<std::mutex> lock(timeline_->mutex());
  const std::string& path = options_.trace_path;
  const bool json = path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (json) {
    timeline_->writer().write_chrome_json(path);
  } else {
    timeline_->writer().write_perfetto(path);
  }
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
  if (!driver_) return "this process's platform has no driver";
  if (!request.trace_path.empty() && request.trace_path != options_.trace_path) {
    if (timeline_ == nullptr) return "tracing must be asked for before the platform is built (hpusim_traceToFile first)";
    options_.trace_path = request.trace_path;
  }
  return "";
}

}  // namespace hpusim::platform
