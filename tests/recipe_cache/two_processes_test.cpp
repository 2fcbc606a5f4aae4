// Two processes share one small cache directory, storing and looking up overlapping keys, while
// this process watches the directory: the recipe files never exceed the limit (recipes plus
// temporary files never exceed 0.99 x the limit), every recipe file verifies (no half-written
// file is ever visible under a recipe name), no lookup returns wrong bytes, and no temporary
// file stays behind. Payloads are functions of their key, so any reader can check them.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "synapse/recipe_cache/recipe_cache.h"
#include "synapse/recipe_cache/recipe_directory.h"
#include "synapse/recipe_cache/recipe_file.h"
#include "tests/recipe_cache/test_support.h"

namespace hpusim::synapse::recipe_cache {
namespace {

using testing::payload_for;
using testing::test_key;

constexpr uint64_t kLimit = 96 * 1024;
constexpr int kIterations = 300;        // about 200 stores per child
constexpr int kKeysPerChild = 300;
constexpr int kSecondChildFirstKey = 150;   // keys 150..299 are shared
constexpr size_t kMinPayload = 256;
constexpr size_t kMaxPayload = 8192;

std::string expected_payload(RecipeKey key) { return payload_for(key, kMinPayload, kMaxPayload); }

// Exit codes of a child.
enum ChildExit { kOk = 0, kWrongBytes = 1, kCorruptSeen = 2, kDiskErrors = 3, kException = 4, kNoStart = 5 };

// A child: waits for the start signal, then creates its cache (after fork, so the child has no
// thread of the parent's) and works; its counters go back through a pipe.
int run_child(const std::filesystem::path& dir, int child, int start_fd, int counters_fd) {
  char go;
  if (::read(start_fd, &go, 1) != 0) return kNoStart;   // the parent closes the pipe to start
  try {
    RecipeCache cache(testing::disk_config(dir, kLimit));
    std::mt19937_64 rng(20240601 + child);
    int first_key = child == 0 ? 0 : kSecondChildFirstKey;
    int result = kOk;
    for (int n = 0; n < kIterations; ++n) {
      RecipeKey own = test_key(first_key + rng() % kKeysPerChild);
      std::shared_ptr<const std::string> hit = cache.lookup(own);
      if (!hit) cache.store(own, expected_payload(own));
      else if (*hit != expected_payload(own)) result = kWrongBytes;
      // Also read a recipe some process wrote: it may be evicted between listing and reading.
      std::vector<RecipeFileInfo> on_disk = list_recipe_files(dir).files;
      if (on_disk.empty()) continue;
      RecipeKey any = on_disk[rng() % on_disk.size()].key;
      if (std::shared_ptr<const std::string> other = cache.lookup(any); other && *other != expected_payload(any))
        result = kWrongBytes;
    }
    cache.flush();
    RecipeCacheCounters counters = cache.counters();
    if (::write(counters_fd, &counters, sizeof counters) != sizeof counters) return kException;
    if (result != kOk) return result;
    if (counters.corrupt_files_removed != 0) return kCorruptSeen;
    if (counters.disk_errors != 0) return kDiskErrors;
  } catch (...) {
    return kException;
  }
  return kOk;
}

// The names in the directory at one instant: a single getdents64 call runs under the
// directory's lock, so no create, rename or unlink lands in the middle of it (a readdir loop
// of several calls could mix two moments).
std::vector<std::string> names_at_one_instant(const std::filesystem::path& dir) {
  std::vector<char> buffer(1 << 20);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + dir.string());
  ssize_t bytes = ::getdents64(fd, buffer.data(), buffer.size());
  ::close(fd);
  // Room for another entry was left, so the call stopped at the end of the directory.
  if (bytes < 0 || static_cast<size_t>(bytes) + 1024 > buffer.size()) throw std::runtime_error("directory listing failed");
  std::vector<std::string> names;
  for (ssize_t offset = 0; offset < bytes;) {
    auto* entry = reinterpret_cast<dirent64*>(buffer.data() + offset);
    names.emplace_back(entry->d_name);
    offset += entry->d_reclen;
  }
  return names;
}

struct Watch {
  uint64_t snapshots = 0;
  uint64_t files_verified = 0;
  uint64_t most_recipe_bytes = 0;
  uint64_t most_bytes_with_temps = 0;
  uint64_t temp_files_seen = 0;
  uint64_t failure_count = 0;
  std::vector<std::string> failures;   // the first few

  void fail(const std::string& what) {
    if (++failure_count <= 10) failures.push_back(what);
  }

  void look(const std::filesystem::path& dir) {
    ++snapshots;
    uint64_t recipe_bytes = 0;
    uint64_t temp_bytes = 0;   // counted at their final size, an upper bound
    std::vector<RecipeKey> recipes;
    for (const std::string& name : names_at_one_instant(dir)) {
      if (std::optional<RecipeKey> key = parse_recipe_file_name(name)) {
        recipe_bytes += recipe_file_bytes(expected_payload(*key).size());
        recipes.push_back(*key);
      } else if (std::optional<RecipeKey> temp = parse_temp_file_name(name)) {
        temp_bytes += recipe_file_bytes(expected_payload(*temp).size());
        ++temp_files_seen;
      }
    }
    most_recipe_bytes = std::max(most_recipe_bytes, recipe_bytes);
    most_bytes_with_temps = std::max(most_bytes_with_temps, recipe_bytes + temp_bytes);
    if (recipe_bytes > kLimit) fail("recipe files hold " + std::to_string(recipe_bytes) + " bytes");
    if (recipe_bytes + temp_bytes > disk_cache_budget_bytes(kLimit))
      fail("recipe and temporary files hold " + std::to_string(recipe_bytes + temp_bytes) + " bytes");
    for (RecipeKey key : recipes) {
      RecipeFileRead read = read_recipe_file(dir / recipe_file_name(key), key);
      if (read.status == RecipeFileRead::Status::Missing) continue;   // evicted since
      if (read.status != RecipeFileRead::Status::Ok) fail(recipe_id(key) + ": " + read.problem);
      else if (read.payload != expected_payload(key)) fail(recipe_id(key) + ": wrong bytes");
      else ++files_verified;
    }
  }
};

TEST(RecipeCacheTwoProcesses, SharedDirectoryStaysWithinTheLimitAndEveryFileVerifies) {
  testing::ScratchDirectory scratch;
  std::filesystem::path dir = scratch / "cache";
  std::filesystem::create_directory(dir);

  int start[2], counters[2][2];
  ASSERT_EQ(::pipe(start), 0);
  std::fflush(nullptr);   // nothing buffered may be written twice
  pid_t children[2];
  for (int child = 0; child < 2; ++child) {
    ASSERT_EQ(::pipe(counters[child]), 0);
    children[child] = ::fork();
    ASSERT_GE(children[child], 0);
    if (children[child] == 0) {
      ::close(start[1]);
      ::close(counters[child][0]);
      ::_exit(run_child(dir, child, start[0], counters[child][1]));
    }
    ::close(counters[child][1]);
  }
  ::close(start[0]);
  ::close(start[1]);   // go

  Watch watch;
  int status[2] = {0, 0};
  bool running[2] = {true, true};
  // Only a guard against a hung child; the test asserts nothing about time.
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (running[0] || running[1]) {
    watch.look(dir);
    for (int child = 0; child < 2; ++child)
      if (running[child] && ::waitpid(children[child], &status[child], WNOHANG) == children[child]) running[child] = false;
    if (std::chrono::steady_clock::now() > give_up) {
      for (int child = 0; child < 2; ++child)
        if (running[child]) ::kill(children[child], SIGKILL), ::waitpid(children[child], &status[child], 0);
      FAIL() << "a child process hung";
    }
  }
  watch.look(dir);

  for (int child = 0; child < 2; ++child) {
    ASSERT_TRUE(WIFEXITED(status[child])) << "child " << child << " did not exit normally";
    EXPECT_EQ(WEXITSTATUS(status[child]), kOk) << "child " << child;
    RecipeCacheCounters c;
    ASSERT_EQ(::read(counters[child][0], &c, sizeof c), static_cast<ssize_t>(sizeof c)) << "child " << child;
    ::close(counters[child][0]);
    EXPECT_GT(c.stores, 100u) << "child " << child;
    EXPECT_EQ(c.disk_writes, c.stores) << "child " << child;
    EXPECT_GT(c.evictions, 0u) << "child " << child;   // the limit was under pressure
    EXPECT_EQ(c.corrupt_files_removed, 0u);
    EXPECT_EQ(c.disk_errors, 0u);
    ::testing::Test::RecordProperty("child" + std::to_string(child) + "_stores", static_cast<int>(c.stores));
    ::testing::Test::RecordProperty("child" + std::to_string(child) + "_disk_hits", static_cast<int>(c.disk_hits));
  }
  for (const std::string& failure : watch.failures) ADD_FAILURE() << failure;
  EXPECT_EQ(watch.failure_count, 0u);
  EXPECT_LE(watch.most_recipe_bytes, disk_cache_budget_bytes(kLimit));
  EXPECT_GT(watch.files_verified, 0u);
  EXPECT_TRUE(list_temp_files(dir).empty());
  std::printf("%llu snapshots, %llu files verified, %llu temporary files seen, at most %llu recipe bytes "
              "(%llu with temporary files) of a %llu byte budget\n",
              static_cast<unsigned long long>(watch.snapshots), static_cast<unsigned long long>(watch.files_verified),
              static_cast<unsigned long long>(watch.temp_files_seen), static_cast<unsigned long long>(watch.most_recipe_bytes),
              static_cast<unsigned long long>(watch.most_bytes_with_temps),
              static_cast<unsigned long long>(disk_cache_budget_bytes(kLimit)));
}

}  // namespace
}  // namespace hpusim::synapse::recipe_cache
