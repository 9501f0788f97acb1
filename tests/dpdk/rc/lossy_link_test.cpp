// LossyLink: the loss-injecting decorator behind RMA_SOFTROCE_LOSS.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "link/fault_link.hpp"
#include "link/lossy_link.hpp"
#include "provider/softroce_device.hpp"
#include "rma/sdk/registry.hpp"

namespace rma::roce {
namespace {

struct Count : FrameSink {
  std::uint64_t frames = 0;
  void on_frame(std::span<const std::uint8_t>) noexcept override { ++frames; }
};

// An Ethernet header with the given EtherType, then two bytes of index.
std::vector<std::uint8_t> frame(std::uint16_t ether_type, int i) {
  std::vector<std::uint8_t> f(16, 0);
  f[12] = static_cast<std::uint8_t>(ether_type >> 8);
  f[13] = static_cast<std::uint8_t>(ether_type);
  f[14] = static_cast<std::uint8_t>(i);
  f[15] = static_cast<std::uint8_t>(i >> 8);
  return f;
}

// Sends n frames one burst of 32 at a time through `tx`, draining `rx`
// between bursts; returns the frames that arrived.
std::uint64_t send(Link& tx, Link& rx, std::uint16_t ether_type, int n) {
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<TxFrame> frames;
  Count got;
  for (int i = 0; i < n; i += 32) {
    bytes.clear();
    frames.clear();
    for (int j = i; j < n && j < i + 32; ++j) bytes.push_back(frame(ether_type, j));
    for (auto& b : bytes) frames.push_back(TxFrame{{b.data(), b.size()}, {}, {}});
    std::size_t done = 0;
    while (done < frames.size()) {
      done += tx.transmit(std::span<const TxFrame>(frames).subspan(done));
      while (rx.poll(got, 1024) != 0) {
      }
    }
  }
  while (rx.poll(got, 1024) != 0) {
  }
  return got.frames;
}

TEST(LossyLink, DropsAboutTheConfiguredFractionOfIpv4FramesAndCountsEach) {
  auto pair = make_fault_link_pair(FaultConfig{});
  LossyLink lossy(std::move(pair.a), 0.01, 7);
  constexpr int kFrames = 20000;
  const std::uint64_t arrived = send(lossy, *pair.b, 0x0800, kFrames);
  const std::uint64_t lost = lossy.counters().tx_loss_injected;
  EXPECT_EQ(arrived + lost, static_cast<std::uint64_t>(kFrames));
  // 1% of 20,000 is 200; a binomial's 5 standard deviations (~70) either side.
  EXPECT_GT(lost, 130u);
  EXPECT_LT(lost, 270u);
  EXPECT_EQ(lossy.counters().tx_frames, arrived);  // the inner link only saw what was kept
}

TEST(LossyLink, NeverDropsControlFramesOrAnythingAtZeroLoss) {
  auto pair = make_fault_link_pair(FaultConfig{});
  LossyLink half(std::move(pair.a), 0.5, 3);
  EXPECT_EQ(send(half, *pair.b, 0x88B5, 1000), 1000u);  // the memif FIN's EtherType passes
  EXPECT_EQ(half.counters().tx_loss_injected, 0u);

  auto clean = make_fault_link_pair(FaultConfig{});
  LossyLink none(std::move(clean.a), 0.0, 3);
  EXPECT_EQ(send(none, *clean.b, 0x0800, 1000), 1000u);
  EXPECT_EQ(none.counters().tx_loss_injected, 0u);
}

TEST(LossyLink, AFullInnerLinkTakesFewerAndTheRestIsOfferedAgain) {
  FaultConfig small;
  small.capacity = 5;  // the inner link refuses frames past 5 queued
  auto pair = make_fault_link_pair(small);
  LossyLink lossy(std::move(pair.a), 0.2, 11);
  const std::uint64_t arrived = send(lossy, *pair.b, 0x0800, 3000);
  EXPECT_EQ(arrived + lossy.counters().tx_loss_injected, 3000u);
}

TEST(LossyLink, TheProviderRefusesALossOutsideZeroToOneHalf) {
  ProviderRegistry reg;
  ASSERT_TRUE(providers::register_softroce(reg).ok());
  Provider* p = reg.find("softroce").value();
  ::setenv("RMA_SOFTROCE_PORT", "ring:lossy-test,ip=10.1.2.3", 1);
  for (const char* bad : {"0.6", "-0.1", "1%", "lots"}) {
    ::setenv("RMA_SOFTROCE_LOSS", bad, 1);
    auto dev = p->open_device("");
    ASSERT_FALSE(dev.ok()) << bad;
    EXPECT_NE(dev.status().message().find("RMA_SOFTROCE_LOSS"), std::string::npos) << dev.status().message();
  }
  ::setenv("RMA_SOFTROCE_LOSS", "0.01", 1);
  auto dev = p->open_device("");
  EXPECT_TRUE(dev.ok()) << dev.status().message();
  ::unsetenv("RMA_SOFTROCE_LOSS");
  ::unsetenv("RMA_SOFTROCE_PORT");
}

}  // namespace
}  // namespace rma::roce
