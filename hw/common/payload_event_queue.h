// A payload event queue that behaves exactly like tlm_utils::peq_with_cb_and_phase (entries
// notified with no delay come out in the next delta cycle, in the order they went in; timed ones
// at their time, in the order they went in, after that time's delta entries), but keeps its timed
// entries in a multimap. SystemC's keeps them in a linked list that every notify walks, so a block
// with thousands of answers outstanding spends its time there.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>

namespace hpusim::hw {

template <typename Owner>
class PayloadEventQueue : public sc_core::sc_object {
 public:
  using Callback = void (Owner::*)(tlm::tlm_generic_payload&, const tlm::tlm_phase&);

  PayloadEventQueue(Owner* owner, Callback callback)
      : sc_core::sc_object(sc_core::sc_gen_unique_name("payload_event_queue")), owner_(owner), callback_(callback) {
    sc_core::sc_spawn_options options;
    options.spawn_method();
    options.set_sensitivity(&event_);
    options.dont_initialize();
    sc_core::sc_spawn([this] { deliver(); }, sc_core::sc_gen_unique_name("deliver"), &options);
  }

  void notify(tlm::tlm_generic_payload& trans, const tlm::tlm_phase& phase, const sc_core::sc_time& delay) {
    if (delay == sc_core::SC_ZERO_TIME) {
      // Entries of an odd delta cycle come out in the next (even) one, and the other way round.
      (sc_core::sc_delta_count() % 2 == 1 ? even_delta_ : odd_delta_).emplace_back(&trans, phase);
      event_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    timed_.emplace(sc_core::sc_time_stamp() + delay, Entry{&trans, phase});   // after its equals
    event_.notify(delay);
  }

 private:
  using Entry = std::pair<tlm::tlm_generic_payload*, tlm::tlm_phase>;

  void deliver() {
    const bool odd = sc_core::sc_delta_count() % 2 == 1;
    std::vector<Entry>& due = odd ? odd_delta_ : even_delta_;
    for (size_t i = 0; i < due.size(); ++i) {   // a callback may add to the other list only
      const Entry entry = due[i];
      (owner_->*callback_)(*entry.first, entry.second);
    }
    due.clear();
    if (!(odd ? even_delta_ : odd_delta_).empty()) event_.notify(sc_core::SC_ZERO_TIME);
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    while (!timed_.empty() && timed_.begin()->first == now) {
      const Entry entry = timed_.begin()->second;
      timed_.erase(timed_.begin());
      (owner_->*callback_)(*entry.first, entry.second);
    }
    if (!timed_.empty()) event_.notify(timed_.begin()->first - now);
  }

  Owner* owner_;
  Callback callback_;
  std::multimap<sc_core::sc_time, Entry> timed_;
  std::vector<Entry> even_delta_, odd_delta_;
  sc_core::sc_event event_;
};

}  // namespace hpusim::hw
