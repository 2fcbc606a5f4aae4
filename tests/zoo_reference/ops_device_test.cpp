// Each reference operation against the TPC library kernel it stands for, run on the functional
// executor: the results must be the same bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "synapse/zoo_reference/ops.h"
#include "synapse/zoo_reference/optim.h"
#include "synapse/zoo_reference/random.h"
#include "tests/zoo_reference/device_kernels.h"

namespace hpusim::synapse::zoo_reference {
namespace {

using namespace test_support;

std::vector<float> uniform(size_t count, float lo, float hi, uint32_t seed) {
  UniformSource source(seed);
  std::vector<float> v(count);
  const float half = 0.5f * (hi - lo), mid = 0.5f * (hi + lo);
  for (float& e : v) e = mid + source.next(half);
  return v;
}

TEST(ZooOpsOnDevice, Reductions) {
  const std::vector<float> x = uniform(300 * 2, -3.0f, 5.0f, 1);
  const auto sums = run_device("reduce_sum_fwd_f32", {f32_tensor({300, 2}, x)}, {f32_output({1, 2})}, {0.0f});
  ASSERT_EQ(sums.size(), 1u);
  expect_same_bits({sum_dim0(x.data(), 300), sum_dim0(x.data() + 300, 300)}, values_of(sums[0]), "sum dim 0");

  const std::vector<float> flat = uniform(1000, -1.0f, 1.0f, 2);
  const auto mean = run_device("reduce_mean_fwd_f32", {f32_tensor({1000}, flat)}, {f32_output({1})}, {0.0f});
  ASSERT_EQ(mean.size(), 1u);
  expect_same_bits({mean_dim0(flat.data(), flat.size())}, values_of(mean[0]), "mean dim 0");

  const std::vector<float> m = uniform(7 * 33, -1.0f, 1.0f, 3);
  const auto outer = run_device("reduce_sum_fwd_f32", {f32_tensor({7, 33}, m)}, {f32_output({7, 1})}, {1.0f});
  ASSERT_EQ(outer.size(), 1u);
  std::vector<float> col(7);
  sum_outer(m.data(), col.data(), 33, 7);
  expect_same_bits(col, values_of(outer[0]), "sum dim 1");
}

TEST(ZooOpsOnDevice, SoftmaxFamily) {
  const size_t n = 130, rows = 3;
  const std::vector<float> x = uniform(n * rows, -5.0f, 5.0f, 4), g = uniform(n * rows, -1.0f, 1.0f, 5);
  std::vector<float> y(x.size()), logp(x.size()), dx(x.size()), dlog(x.size());
  softmax(x.data(), y.data(), rows, n);
  log_softmax(x.data(), logp.data(), rows, n);
  softmax_bwd(g.data(), y.data(), dx.data(), rows, n);
  log_softmax_bwd(g.data(), logp.data(), dlog.data(), rows, n);
  const auto dev_y = run_device("softmax_fwd_f32", {f32_tensor({130, 3}, x)}, {f32_output({130, 3})});
  const auto dev_logp = run_device("log_softmax_fwd_f32", {f32_tensor({130, 3}, x)}, {f32_output({130, 3})});
  const auto dev_dx =
      run_device("softmax_bwd_f32", {f32_tensor({130, 3}, g), f32_tensor({130, 3}, y)}, {f32_output({130, 3})});
  const auto dev_dlog =
      run_device("log_softmax_bwd_f32", {f32_tensor({130, 3}, g), f32_tensor({130, 3}, logp)}, {f32_output({130, 3})});
  ASSERT_FALSE(dev_y.empty() || dev_logp.empty() || dev_dx.empty() || dev_dlog.empty());
  expect_same_bits(y, values_of(dev_y[0]), "softmax");
  expect_same_bits(logp, values_of(dev_logp[0]), "log_softmax");
  expect_same_bits(dx, values_of(dev_dx[0]), "softmax_bwd");
  expect_same_bits(dlog, values_of(dev_dlog[0]), "log_softmax_bwd");
}

TEST(ZooOpsOnDevice, Layernorm) {
  const size_t n = 70, rows = 4;
  const float eps = 1e-5f;
  const std::vector<float> x = uniform(n * rows, -3.0f, 5.0f, 6), g = uniform(n * rows, -1.0f, 1.0f, 7);
  const std::vector<float> gamma = uniform(n, 0.5f, 1.5f, 8), beta = uniform(n, -0.5f, 0.5f, 9);
  std::vector<float> y(x.size()), mean(rows), rstd(rows), dx(x.size()), dgamma(n), dbeta(n);
  layernorm(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows, n, eps);
  layernorm_bwd(g.data(), x.data(), mean.data(), rstd.data(), gamma.data(), dx.data(), rows, n);
  layernorm_bwd_gamma_beta(g.data(), x.data(), mean.data(), rstd.data(), dgamma.data(), dbeta.data(), rows, n);

  const auto fwd = run_device("layernorm_fwd_f32", {f32_tensor({70, 4}, x), f32_tensor({70}, gamma), f32_tensor({70}, beta)},
                              {f32_output({70, 4}), f32_output({1, 4}), f32_output({1, 4})}, {eps});
  ASSERT_EQ(fwd.size(), 3u);
  expect_same_bits(y, values_of(fwd[0]), "layernorm y");
  expect_same_bits(mean, values_of(fwd[1]), "layernorm mean");
  expect_same_bits(rstd, values_of(fwd[2]), "layernorm rstd");
  const std::vector<HostTensor> saved = {f32_tensor({70, 4}, g), f32_tensor({70, 4}, x), f32_tensor({1, 4}, mean),
                                         f32_tensor({1, 4}, rstd)};
  std::vector<HostTensor> bwd_in = saved;
  bwd_in.push_back(f32_tensor({70}, gamma));
  const auto bwd = run_device("layernorm_bwd_f32", bwd_in, {f32_output({70, 4})});
  const auto gb = run_device("layernorm_bwd_gamma_beta_f32", saved, {f32_output({70}), f32_output({70})});
  ASSERT_FALSE(bwd.empty() || gb.empty());
  expect_same_bits(dx, values_of(bwd[0]), "layernorm dx");
  expect_same_bits(dgamma, values_of(gb[0]), "layernorm dgamma");
  expect_same_bits(dbeta, values_of(gb[1]), "layernorm dbeta");
}

TEST(ZooOpsOnDevice, Elementwise) {
  const size_t count = 150;
  std::vector<float> x = uniform(count, -6.0f, 6.0f, 10);
  x[0] = -0.0f;
  x[1] = 0.0f;
  const std::vector<float> g = uniform(count, -1.0f, 1.0f, 11), b = uniform(count, -2.0f, 2.0f, 12);
  const std::vector<float> bias = uniform(15, -1.0f, 1.0f, 13);
  std::vector<float> r(count), dr(count), ge(count), dge(count), sum(count), prod(count), biased = x;
  relu(x.data(), r.data(), count);
  relu_bwd(g.data(), x.data(), dr.data(), count);
  gelu_tanh(x.data(), ge.data(), count);
  gelu_tanh_bwd(g.data(), x.data(), dge.data(), count);
  add(x.data(), b.data(), sum.data(), count);
  mul(x.data(), b.data(), prod.data(), count);
  add_row(biased.data(), bias.data(), 10, 15);
  const std::vector<uint32_t> s = {150};
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"relu_fwd_f32", r}, {"gelu_tanh_fwd_f32", ge}};
  for (const auto& [guid, want] : cases) {
    const auto out = run_device(guid, {f32_tensor(s, x)}, {f32_output(s)});
    ASSERT_FALSE(out.empty());
    expect_same_bits(want, values_of(out[0]), guid);
  }
  const std::vector<std::pair<std::string, std::vector<float>>> backward = {
      {"relu_bwd_f32", dr}, {"gelu_tanh_bwd_f32", dge}};
  for (const auto& [guid, want] : backward) {
    const auto out = run_device(guid, {f32_tensor(s, g), f32_tensor(s, x)}, {f32_output(s)});
    ASSERT_FALSE(out.empty());
    expect_same_bits(want, values_of(out[0]), guid);
  }
  const auto dev_sum = run_device("add_fwd_f32", {f32_tensor(s, x), f32_tensor(s, b)}, {f32_output(s)});
  const auto dev_prod = run_device("mul_fwd_f32", {f32_tensor(s, x), f32_tensor(s, b)}, {f32_output(s)});
  const auto dev_bias = run_device("add_fwd_f32", {f32_tensor({15, 10}, x), f32_tensor({15}, bias)}, {f32_output({15, 10})});
  ASSERT_FALSE(dev_sum.empty() || dev_prod.empty() || dev_bias.empty());
  expect_same_bits(sum, values_of(dev_sum[0]), "add");
  expect_same_bits(prod, values_of(dev_prod[0]), "mul");
  expect_same_bits(biased, values_of(dev_bias[0]), "bias add");

  const std::vector<float> mask = dropout_mask(count, 0.3f, 5);
  std::vector<float> dd(count);
  dropout_bwd(g.data(), mask.data(), dropout_scale(0.3f), dd.data(), count);
  const auto dev_dd = run_device("dropout_bwd_f32", {f32_tensor(s, g), f32_tensor(s, mask)}, {f32_output(s)}, {0.3f});
  ASSERT_FALSE(dev_dd.empty());
  expect_same_bits(dd, values_of(dev_dd[0]), "dropout_bwd");
}

TEST(ZooOpsOnDevice, NllLoss) {
  const size_t classes = 10, batch = 6;
  std::vector<float> logp(classes * batch);
  log_softmax(uniform(logp.size(), -4.0f, 4.0f, 14).data(), logp.data(), batch, classes);
  const std::vector<int32_t> target = {3, 0, 9, 9, 5, 1};
  float total_weight = 0.0f;
  const float loss = nll_loss(logp.data(), target.data(), batch, classes, &total_weight);
  std::vector<float> dlogp(logp.size());
  nll_loss_bwd(1.0f, target.data(), total_weight, dlogp.data(), batch, classes);
  const auto fwd = run_device("nll_loss_fwd_f32", {f32_tensor({10, 6}, logp), i32_tensor({6}, target)},
                              {f32_output({1}), f32_output({1})});
  ASSERT_EQ(fwd.size(), 2u);
  expect_same_bits({loss, total_weight}, {fwd[0].at(0), fwd[1].at(0)}, "nll loss, total weight");
  const auto bwd = run_device("nll_loss_bwd_f32", {f32_tensor({1}, {1.0f}), i32_tensor({6}, target), fwd[1]},
                              {f32_output({10, 6})});
  ASSERT_FALSE(bwd.empty());
  expect_same_bits(dlogp, values_of(bwd[0]), "nll dx");
}

// Several steps, so the states are no longer zero; the device runs each step from the reference's
// previous state (not in place: separate outputs).
TEST(ZooOpsOnDevice, Optimizers) {
  const size_t count = 100;
  const std::vector<uint32_t> s = {100};
  std::vector<float> p = uniform(count, -1.0f, 1.0f, 15);
  std::vector<float> sq(count, 0.0f), acc(count, 0.0f), m(count, 0.0f), v(count, 0.0f), buf(count, 0.0f);
  std::vector<float> p_adam = p, p_sgd = p;
  AdadeltaConfig adadelta;
  adadelta.weight_decay = 1e-3f;
  AdamConfig adam;
  adam.lr = 1e-3f;
  adam.weight_decay = 1e-2f;
  SgdConfig sgd;
  sgd.lr = 0.05f;
  sgd.momentum = 0.9f;
  sgd.dampening = 0.1f;
  for (uint32_t step = 1; step <= 3; ++step) {
    const std::vector<float> g = uniform(count, -1.0f, 1.0f, 100 + step);
    const auto d1 = run_device("adadelta_f32", {f32_tensor(s, p), f32_tensor(s, g), f32_tensor(s, sq), f32_tensor(s, acc)},
                               {f32_output(s), f32_output(s), f32_output(s)},
                               {adadelta.lr, adadelta.rho, adadelta.eps, adadelta.weight_decay});
    const auto d2 = run_device("adam_f32", {f32_tensor(s, p_adam), f32_tensor(s, g), f32_tensor(s, m), f32_tensor(s, v)},
                               {f32_output(s), f32_output(s), f32_output(s)},
                               {adam.lr, adam.beta1, adam.beta2, adam.eps, adam.weight_decay, static_cast<float>(step)});
    const auto d3 = run_device("sgd_momentum_f32", {f32_tensor(s, p_sgd), f32_tensor(s, g), f32_tensor(s, buf)},
                               {f32_output(s), f32_output(s)},
                               {sgd.lr, sgd.momentum, sgd.dampening, sgd.weight_decay, step == 1 ? 1.0f : 0.0f});
    ASSERT_FALSE(d1.empty() || d2.empty() || d3.empty());
    adadelta_step(adadelta, p.data(), g.data(), sq.data(), acc.data(), count);
    adam_step(adam, adam_factors_on_host(adam, step), p_adam.data(), g.data(), m.data(), v.data(), count);
    sgd_step(sgd, step == 1, p_sgd.data(), g.data(), buf.data(), count);
    expect_same_bits(p, values_of(d1[0]), "adadelta param");
    expect_same_bits(sq, values_of(d1[1]), "adadelta square_avg");
    expect_same_bits(acc, values_of(d1[2]), "adadelta acc_delta");
    expect_same_bits(p_adam, values_of(d2[0]), "adam param");
    expect_same_bits(m, values_of(d2[1]), "adam exp_avg");
    expect_same_bits(v, values_of(d2[2]), "adam exp_avg_sq");
    expect_same_bits(p_sgd, values_of(d3[0]), "sgd param");
    expect_same_bits(buf, values_of(d3[1]), "sgd momentum_buffer");
  }
}

}  // namespace
}  // namespace hpusim::synapse::zoo_reference
