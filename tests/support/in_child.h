// Runs a test body in a child process and returns what it reports: for tests that need a
// platform of their own (one per process: SystemC elaborates once) several times in one test.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <exception>
#include <functional>
#include <type_traits>
#include <vector>

namespace hpusim::testing {

// `body` runs in a forked child; its `expected` reports (trivially copyable) come back through a
// pipe. An exception in the child gives `on_exception(what)` in their place. A child that reports
// nothing (it crashed) fails the calling test and gives default reports.
template <class Report>
std::vector<Report> in_child(const std::function<std::vector<Report>()>& body, size_t expected,
                             const std::function<std::vector<Report>(const char*)>& on_exception = nullptr) {
  static_assert(std::is_trivially_copyable_v<Report>, "reports cross a pipe as bytes");
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::vector<Report> reports;
    try {
      reports = body();
    } catch (const std::exception& e) {
      reports = on_exception ? on_exception(e.what()) : std::vector<Report>{};
    }
    reports.resize(expected);
    const size_t bytes = reports.size() * sizeof(Report);
    _exit(write(fds[1], reports.data(), bytes) == static_cast<ssize_t>(bytes) ? 0 : 1);
  }
  close(fds[1]);
  std::vector<Report> reports(expected);
  size_t got = 0;
  while (got < expected * sizeof(Report)) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(reports.data()) + got, expected * sizeof(Report) - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(got, expected * sizeof(Report)) << "the child reported nothing (status " << status << ")";
  if (got != expected * sizeof(Report)) reports.assign(expected, Report{});
  return reports;
}

}  // namespace hpusim::testing
