// hw::PayloadEventQueue against SystemC's tlm_utils::peq_with_cb_and_phase: fed the same entries,
// including entries notified from inside a delivery, both deliver them in the same order, at the
// same time and in the same delta cycle.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>

#include "hw/common/payload_event_queue.h"

namespace hpusim::testing {
namespace {

using Delivery = std::tuple<uint64_t, uint64_t, uint64_t, int>;   // ps, delta, payload, phase

SC_MODULE(TwoQueues) {
  static constexpr size_t kPayloads = 64;

  SC_CTOR(TwoQueues) : reference_(this, &TwoQueues::from_reference), ours_(this, &TwoQueues::from_ours) {
    for (size_t i = 0; i < kPayloads; ++i) payloads_[i].set_address(i);
    SC_THREAD(feed);
  }

  std::vector<Delivery> reference_order, our_order;

 private:
  void notify_both(size_t payload, int phase, uint64_t delay_ps) {
    const sc_core::sc_time delay(static_cast<double>(delay_ps), sc_core::SC_PS);
    const tlm::tlm_phase p = static_cast<tlm::tlm_phase_enum>(phase);
    reference_.notify(payloads_[payload], p, delay);
    ours_.notify(payloads_[payload], p, delay);
  }

  // Delays drawn so that many entries share a time, and a quarter come with no delay.
  uint64_t draw_delay() {
    const uint64_t pick = random_() % 8;
    return pick < 2 ? 0 : (random_() % 6) * 1000;
  }

  void feed() {
    for (int round = 0; round < 200; ++round) {
      const int count = static_cast<int>(random_() % 5);
      for (int i = 0; i < count; ++i) {
        notify_both(random_() % kPayloads, 1 + static_cast<int>(random_() % 3), draw_delay());
      }
      if (random_() % 3 == 0) {
        wait(sc_core::SC_ZERO_TIME);
      } else {
        wait(sc_core::sc_time(static_cast<double>((random_() % 3) * 1000), sc_core::SC_PS));
      }
    }
  }

  void record(std::vector<Delivery>& order, tlm::tlm_generic_payload& trans, const tlm::tlm_phase& phase) {
    order.emplace_back(sc_core::sc_time_stamp().value(), sc_core::sc_delta_count(), trans.get_address(),
                       static_cast<int>(phase));
  }

  // A delivery sometimes sends its payload on again: the same choice from both queues, since they
  // see the same entries in the same order (the choice is taken from the payload and the count).
  void pass_on(std::vector<Delivery>& order, bool from_reference, tlm::tlm_generic_payload& trans) {
    const uint64_t n = order.size();
    if ((n + trans.get_address()) % 4 != 0) return;
    const sc_core::sc_time delay(static_cast<double>(((n + trans.get_address()) % 3) * 1000), sc_core::SC_PS);
    if (from_reference) {
      reference_.notify(trans, tlm::END_RESP, delay);
    } else {
      ours_.notify(trans, tlm::END_RESP, delay);
    }
  }

  void from_reference(tlm::tlm_generic_payload& trans, const tlm::tlm_phase& phase) {
    record(reference_order, trans, phase);
    if (phase != tlm::END_RESP) pass_on(reference_order, true, trans);
  }
  void from_ours(tlm::tlm_generic_payload& trans, const tlm::tlm_phase& phase) {
    record(our_order, trans, phase);
    if (phase != tlm::END_RESP) pass_on(our_order, false, trans);
  }

  std::array<tlm::tlm_generic_payload, kPayloads> payloads_;
  std::mt19937_64 random_{7};
  tlm_utils::peq_with_cb_and_phase<TwoQueues> reference_;
  hw::PayloadEventQueue<TwoQueues> ours_;
};

TEST(PayloadEventQueue, DeliversInSystemCsOrderAtTheSameTimesAndDeltaCycles) {
  TwoQueues queues("queues");
  sc_core::sc_start();
  ASSERT_GT(queues.reference_order.size(), 300u);
  ASSERT_EQ(queues.our_order.size(), queues.reference_order.size());
  for (size_t i = 0; i < queues.reference_order.size(); ++i) {
    ASSERT_EQ(queues.our_order[i], queues.reference_order[i]) << "delivery " << i;
  }
  // The feed did exercise what matters: deliveries sharing a time, and entries sent on from a delivery.
  size_t shared_time = 0, sent_on = 0;
  for (size_t i = 1; i < queues.reference_order.size(); ++i) {
    if (std::get<0>(queues.reference_order[i]) == std::get<0>(queues.reference_order[i - 1])) ++shared_time;
    if (std::get<3>(queues.reference_order[i]) == static_cast<int>(tlm::END_RESP)) ++sent_on;
  }
  EXPECT_GT(shared_time, 100u);
  EXPECT_GT(sent_on, 20u);
}

}  // namespace
}  // namespace hpusim::testing
