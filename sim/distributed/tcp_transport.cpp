#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "sim/distributed/transport.h"

namespace hpusim::distributed {
namespace {

constexpr uint32_t kMagic = 0x48505553;   // "HPUS": a connection from another rank of this run

struct Hello {
  uint32_t magic = kMagic;
  uint32_t rank = 0;
  uint32_t ranks = 0;
  uint32_t listen_port = 0;
};
struct Address {
  uint32_t ip = 0;   // network order
  uint32_t port = 0;
};

std::runtime_error failure(const std::string& what) {
  return std::runtime_error("TCP transport: " + what + ": " + std::strerror(errno));
}

void send_all(int fd, const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw failure("send");
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void recv_all(int fd, void* data, size_t bytes, const std::string& from) {
  auto* p = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw std::runtime_error("TCP transport: " + from + " closed the connection");
    if (n < 0) throw failure("receive from " + from);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

int listener(uint16_t port, uint16_t* bound) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw failure("socket");
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw failure("listen on port " + std::to_string(port));
  }
  if (::listen(fd, 128) != 0) throw failure("listen");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *bound = ntohs(a.sin_port);
  return fd;
}

void tune(int fd) {
  const int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
}

// Connects to `ip:port`, retrying until `deadline` (the peer may not listen yet).
int connect_to(uint32_t ip, uint16_t port, std::chrono::steady_clock::time_point deadline, const std::string& what) {
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw failure("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = ip;
    a.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      tune(fd);
      return fd;
    }
    ::close(fd);
    if (std::chrono::steady_clock::now() > deadline) throw failure("no answer from " + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

uint32_t resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0 || found == nullptr) {
    throw std::runtime_error("TCP transport: the rendezvous host '" + host + "': " + ::gai_strerror(rc));
  }
  const uint32_t ip = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr.s_addr;
  ::freeaddrinfo(found);
  return ip;
}

class TcpTransport final : public Transport {
 public:
  TcpTransport(int rank, int ranks, const std::string& host, uint16_t port, double timeout_s)
      : rank_(rank), size_(ranks), fd_(static_cast<size_t>(ranks), -1) {
    if (ranks < 1 || rank < 0 || rank >= ranks) {
      throw std::invalid_argument("TCP transport: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
    }
    if (ranks == 1) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                  std::chrono::duration<double>(timeout_s));
    const std::string rendezvous = host + ":" + std::to_string(port);
    std::vector<Address> table(static_cast<size_t>(ranks));
    uint16_t mine = 0;
    const int listen_fd = listener(rank == 0 ? port : 0, &mine);
    try {
      if (rank == 0) {
        table[0] = {0, mine};
        for (int joined = 1; joined < ranks; ++joined) {
          const int fd = accept_until(listen_fd, deadline, rendezvous);
          Hello h;
          recv_all(fd, &h, sizeof h, "a rank joining at " + rendezvous);
          check_hello(h, fd);
          sockaddr_in peer{};
          socklen_t len = sizeof peer;
          ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len);
          table[h.rank] = {peer.sin_addr.s_addr, h.listen_port};
        }
        for (int r = 1; r < ranks; ++r) send_all(fd_[static_cast<size_t>(r)], table.data(), table.size() * sizeof(Address));
      } else {
        const int fd = connect_to(resolve(host), port, deadline, "rank 0 at the rendezvous " + rendezvous);
        fd_[0] = fd;
        const Hello h{kMagic, static_cast<uint32_t>(rank), static_cast<uint32_t>(ranks), mine};
        send_all(fd, &h, sizeof h);
        recv_all(fd, table.data(), table.size() * sizeof(Address), "rank 0");
        table[0].ip = resolve(host);
        // Lower ranks listen already: connect to them, then take the higher ranks' connections.
        for (int r = 1; r < rank; ++r) {
          const Address& a = table[static_cast<size_t>(r)];
          const int peer = connect_to(a.ip, static_cast<uint16_t>(a.port), deadline, "rank " + std::to_string(r));
          const Hello hello{kMagic, static_cast<uint32_t>(rank), static_cast<uint32_t>(ranks), 0};
          send_all(peer, &hello, sizeof hello);
          fd_[static_cast<size_t>(r)] = peer;
        }
        for (int r = rank + 1; r < ranks; ++r) {
          const int peer = accept_until(listen_fd, deadline, "port " + std::to_string(mine));
          Hello hello;
          recv_all(peer, &hello, sizeof hello, "a rank joining");
          check_hello(hello, peer);
        }
      }
    } catch (...) {
      ::close(listen_fd);
      close_all();
      throw;
    }
    ::close(listen_fd);
    for (int fd : fd_) {
      if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
  }
  ~TcpTransport() override { close_all(); }

  int rank() const override { return rank_; }
  int ranks() const override { return size_; }
  const char* name() const override { return "TCP"; }

  std::vector<uint64_t> allgather(const std::vector<uint64_t>& mine) override {
    const size_t n = static_cast<size_t>(size_), bytes = mine.size() * sizeof(uint64_t);
    std::vector<std::vector<uint8_t>> out(n);
    for (size_t r = 0; r < n; ++r) {
      if (r != static_cast<size_t>(rank_)) out[r].assign(reinterpret_cast<const uint8_t*>(mine.data()),
                                                         reinterpret_cast<const uint8_t*>(mine.data()) + bytes);
    }
    std::vector<uint64_t> expected(n, bytes);
    expected[static_cast<size_t>(rank_)] = 0;
    const auto in = transfer(out, expected);
    std::vector<uint64_t> all(mine.size() * n);
    for (size_t r = 0; r < n; ++r) {
      const uint8_t* from = r == static_cast<size_t>(rank_) ? reinterpret_cast<const uint8_t*>(mine.data()) : in[r].data();
      std::memcpy(all.data() + r * mine.size(), from, bytes);
    }
    return all;
  }

  std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>& out,
                                             const std::vector<uint64_t>& in_bytes) override {
    std::vector<std::vector<uint8_t>> to_peers = out;
    std::vector<uint64_t> from_peers = in_bytes;
    const size_t me = static_cast<size_t>(rank_);
    to_peers[me].clear();
    from_peers[me] = 0;
    auto in = transfer(to_peers, from_peers);
    in[me] = out[me];
    return in;
  }

  [[noreturn]] void abort() override {
    close_all();   // the others' next meeting fails, naming this rank
    std::_Exit(1);
  }

 private:
  // Sends out[r] to every rank r and receives in_bytes[r] from it, all at once (poll), so that no
  // pair waits on the other's full socket buffer.
  std::vector<std::vector<uint8_t>> transfer(const std::vector<std::vector<uint8_t>>& out,
                                             const std::vector<uint64_t>& in_bytes) {
    const size_t n = static_cast<size_t>(size_);
    std::vector<std::vector<uint8_t>> in(n);
    std::vector<size_t> sent(n, 0), got(n, 0);
    for (size_t r = 0; r < n; ++r) in[r].resize(in_bytes[r]);
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<size_t> peer_of;
      for (size_t r = 0; r < n; ++r) {
        short events = 0;
        if (sent[r] < out[r].size()) events |= POLLOUT;
        if (got[r] < in[r].size()) events |= POLLIN;
        if (events == 0) continue;
        fds.push_back({fd_[r], events, 0});
        peer_of.push_back(r);
      }
      if (fds.empty()) return in;
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        throw failure("poll");
      }
      for (size_t i = 0; i < fds.size(); ++i) {
        const size_t r = peer_of[i];
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          if (got[r] < in[r].size()) {
            const ssize_t k = ::recv(fd_[r], in[r].data() + got[r], in[r].size() - got[r], 0);
            if (k == 0 || (k < 0 && errno == ECONNRESET)) throw closed(r);
            if (k < 0 && errno != EAGAIN && errno != EINTR) throw failure("receive from rank " + std::to_string(r));
            if (k > 0) got[r] += static_cast<size_t>(k);
          }
        }
        if ((fds[i].revents & POLLOUT) && sent[r] < out[r].size()) {
          const ssize_t k = ::send(fd_[r], out[r].data() + sent[r], out[r].size() - sent[r], MSG_NOSIGNAL);
          if (k < 0 && (errno == EPIPE || errno == ECONNRESET)) throw closed(r);
          if (k < 0 && errno != EAGAIN && errno != EINTR) throw failure("send to rank " + std::to_string(r));
          if (k > 0) sent[r] += static_cast<size_t>(k);
        }
      }
    }
  }

  static std::runtime_error closed(size_t rank) {
    return std::runtime_error("TCP transport: rank " + std::to_string(rank) +
                              " closed its connection (that process ended or failed)");
  }

  int accept_until(int listen_fd, std::chrono::steady_clock::time_point deadline, const std::string& where) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        throw std::runtime_error("TCP transport: rank " + std::to_string(rank_) + " waited in vain for the other " +
                                 std::to_string(size_ - 1) + " ranks at " + where);
      }
      pollfd p{listen_fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
      if (ready <= 0) continue;
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      tune(fd);
      return fd;
    }
  }

  void check_hello(const Hello& h, int fd) {
    if (h.magic != kMagic || h.ranks != static_cast<uint32_t>(size_) || h.rank == 0 || h.rank >= h.ranks ||
        fd_[h.rank] >= 0) {
      ::close(fd);
      throw std::runtime_error("TCP transport: a connection that is not a rank of this run of " +
                               std::to_string(size_) + " (rank " + std::to_string(h.rank) + " of " +
                               std::to_string(h.ranks) + ", or a rank joining twice)");
    }
    fd_[h.rank] = fd;
  }

  void close_all() {
    for (int& fd : fd_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }

  int rank_, size_;
  std::vector<int> fd_;   // the connection to each other rank
};

}  // namespace

std::unique_ptr<Transport> tcp_transport(int rank, int ranks, const std::string& host, uint16_t port, double timeout_s) {
  return std::make_unique<TcpTransport>(rank, ranks, host, port, timeout_s);
}

}  // namespace hpusim::distributed
