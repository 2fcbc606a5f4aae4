// The TCP transport of a split simulation (sim/distributed/transport.h): ranks forked from the
// test meet at a rendezvous port, gather every rank's words and exchange bytes of any size
// (larger than the sockets' buffers, in both directions at once); a rank that ends closes its
// connections and the others' next meeting says which; nobody at the rendezvous is a clear error.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/distributed/transport.h"

namespace hpusim::testing {
namespace {

uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Runs `body(rank)` in `ranks` processes (this one is rank 0); the exit codes of the others.
std::vector<int> run_ranks(int ranks, const std::function<int(int)>& body) {
  std::vector<pid_t> children;
  for (int r = 1; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 3;
      try {
        code = body(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        code = 4;
      }
      std::_Exit(code);
    }
    children.push_back(pid);
  }
  const int mine = body(0);
  std::vector<int> codes{mine};
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100);
  }
  return codes;
}

std::vector<uint8_t> bytes_from_to(int from, int to, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(from * 31 + to * 7 + i * 13);
  return v;
}

TEST(TcpTransport, RanksGatherWordsAndExchangeBytesOfAnySize) {
  const uint16_t port = free_port();
  constexpr int kRanks = 3;
  const auto codes = run_ranks(kRanks, [&](int rank) {
    auto t = distributed::tcp_transport(rank, kRanks, "localhost", port, 30);
    if (t->rank() != rank || t->ranks() != kRanks) return 10;
    for (int round = 0; round < 3; ++round) {
      const std::vector<uint64_t> all = t->allgather({uint64_t(rank), uint64_t(100 * rank + round)});
      for (int r = 0; r < kRanks; ++r) {
        if (all[2 * r] != uint64_t(r) || all[2 * r + 1] != uint64_t(100 * r + round)) return 11;
      }
      // 3 MB between some pairs (both ways at once), nothing between others, a few bytes to self.
      const auto size = [&](int from, int to) -> size_t { return (from + to + round) % 2 == 0 ? 0 : 3'000'000 + to; };
      std::vector<std::vector<uint8_t>> out(kRanks);
      std::vector<uint64_t> in_bytes(kRanks);
      for (int r = 0; r < kRanks; ++r) {
        out[r] = bytes_from_to(rank, r, size(rank, r));
        in_bytes[r] = size(r, rank);
      }
      const auto in = t->exchange(out, in_bytes);
      for (int r = 0; r < kRanks; ++r) {
        if (in[r] != bytes_from_to(r, rank, size(r, rank))) return 12;
      }
    }
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

TEST(TcpTransport, ARankThatEndsIsNamedAtTheNextMeeting) {
  const uint16_t port = free_port();
  const auto codes = run_ranks(2, [&](int rank) {
    auto t = distributed::tcp_transport(rank, 2, "127.0.0.1", port, 30);
    t->allgather({1});
    if (rank == 1) return 0;   // ends: its connections close
    try {
      t->allgather({2});
    } catch (const std::runtime_error& e) {
      return std::string(e.what()) == "TCP transport: rank 1 closed its connection (that process ended or failed)" ? 0 : 21;
    }
    return 20;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(TcpTransport, NobodyAtTheRendezvousEndsInAClearError) {
  const uint16_t port = free_port();
  try {
    distributed::tcp_transport(1, 2, "127.0.0.1", port, 0.5);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("TCP transport: no answer from rank 0 at the rendezvous 127.0.0.1:" +
                                         std::to_string(port)),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(distributed::tcp_transport(0, 2, "127.0.0.1", port, 0.5), std::runtime_error);
  EXPECT_THROW(distributed::tcp_transport(2, 2, "127.0.0.1", port, 0.5), std::invalid_argument);
}

}  // namespace
}  // namespace hpusim::testing
