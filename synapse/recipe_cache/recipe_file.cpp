#include "synapse/recipe_cache/recipe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "synapse/recipe_cache/fnv1a.h"

namespace hpusim::synapse::recipe_cache {

namespace {

// Not the recipe frame's "HPURECIP": a cache file and a recipe file are never taken for each other.
constexpr char kMagic[8] = {'H', 'P', 'U', 'C', 'A', 'C', 'H', 'E'};

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i) & 0xff));
}

uint64_t get_le(const std::string& in, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{static_cast<unsigned char>(in[offset + i])} << (8 * i);
  return value;
}

std::string errno_text(const std::string& what, const std::filesystem::path& path, int error) {
  return what + " " + path.string() + ": " + std::strerror(error);
}

// Reads exactly size bytes; false (errno set, or 0 at an early end of file) otherwise.
bool read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { if (fd_ >= 0) ::close(fd_); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error a deferred write may only show here.
  bool close() {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

// The header's problem, or "" when it describes key's recipe of a file file_bytes long.
std::string check_header(const std::string& header, RecipeKey key, uint64_t file_bytes) {
  if (std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) return "bad magic";
  uint64_t version = get_le(header, 8, 4);
  if (version != kRecipeFormatVersion)
    return "format version " + std::to_string(version) + ", expected " + std::to_string(kRecipeFormatVersion);
  if (get_le(header, 12, 4) != kRecipeHeaderBytes) return "bad header size";
  if (get_le(header, 16, 8) != key) return "holds recipe " + recipe_id(get_le(header, 16, 8));
  uint64_t payload_bytes = get_le(header, 24, 8);
  if (payload_bytes != file_bytes - kRecipeHeaderBytes)
    return "payload of " + std::to_string(payload_bytes) + " bytes in a file of " + std::to_string(file_bytes) +
           " bytes (truncated?)";
  return "";
}

}  // namespace

std::string encode_recipe_header(RecipeKey key, const std::string& payload) {
  std::string out;
  out.append(kMagic, sizeof kMagic);
  put_le(out, kRecipeFormatVersion, 4);
  put_le(out, kRecipeHeaderBytes, 4);
  put_le(out, key, 8);
  put_le(out, payload.size(), 8);
  put_le(out, fnv1a64(payload.data(), payload.size()), 8);
  return out;
}

RecipeFileRead read_recipe_file(const std::filesystem::path& path, RecipeKey key) {
  RecipeFileRead result;
  using Status = RecipeFileRead::Status;
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    result.status = errno == ENOENT ? Status::Missing : Status::IoError;
    if (result.status == Status::IoError) result.problem = errno_text("cannot open", path, errno);
    return result;
  }
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) {
    result.status = Status::IoError;
    result.problem = errno_text("cannot stat", path, errno);
    return result;
  }
  result.device = info.st_dev;
  result.inode = info.st_ino;
  if (!S_ISREG(info.st_mode)) {
    result.status = Status::IoError;
    result.problem = path.string() + " is not a regular file";
    return result;
  }
  auto file_bytes = static_cast<uint64_t>(info.st_size);
  result.status = Status::Corrupt;
  if (file_bytes < kRecipeHeaderBytes) {
    result.problem = "file of " + std::to_string(file_bytes) + " bytes is shorter than the header (truncated?)";
    return result;
  }
  auto read_failed = [&] {
    if (errno == 0) {
      result.problem = "ended early while reading (truncated?)";
    } else {
      result.status = Status::IoError;
      result.problem = errno_text("cannot read", path, errno);
    }
    return result;
  };
  // The header first: a file that is not a recipe is not read (or allocated) whole.
  std::string header(kRecipeHeaderBytes, '\0');
  if (!read_all(fd.get(), header.data(), header.size())) return read_failed();
  result.problem = check_header(header, key, file_bytes);
  if (!result.problem.empty()) return result;
  std::string payload(file_bytes - kRecipeHeaderBytes, '\0');
  if (!read_all(fd.get(), payload.data(), payload.size())) return read_failed();
  if (get_le(header, 32, 8) != fnv1a64(payload.data(), payload.size())) {
    result.problem = "payload checksum mismatch";
    return result;
  }
  result.status = Status::Ok;
  result.payload = std::move(payload);
  return result;
}

std::string write_recipe_file(const std::filesystem::path& directory, RecipeKey key, const std::string& payload) {
  std::filesystem::path temp = directory / temp_file_name(key, ::getpid());
  std::filesystem::path final_path = directory / recipe_file_name(key);
  std::string header = encode_recipe_header(key, payload);

  FileDescriptor fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return errno_text("cannot create", temp, errno);
  std::string problem;
  if (!write_all(fd.get(), header.data(), header.size()) || !write_all(fd.get(), payload.data(), payload.size()))
    problem = errno_text("cannot write", temp, errno);
  else if (!fd.close()) problem = errno_text("cannot close", temp, errno);
  else if (::rename(temp.c_str(), final_path.c_str()) != 0) problem = errno_text("cannot rename to", final_path, errno);
  if (!problem.empty()) ::unlink(temp.c_str());
  return problem;
}

}  // namespace hpusim::synapse::recipe_cache
