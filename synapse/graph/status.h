// The status codes of the Synapse API (synStatus, with its numbering) and a result that carries
// one with a message.
#pragma once

#include <cstdint>
#include <string>

namespace hpusim::synapse::graph {

enum class Status : uint8_t {
  Success = 0,
  InvalidArgument = 1,
  CbFull = 2,
  OutOfHostMemory = 3,
  OutOfDeviceMemory = 4,
  ObjectAlreadyInitialized = 5,
  ObjectNotInitialized = 6,
  CommandSubmissionFailure = 7,
  NoDeviceFound = 8,
  DeviceTypeMismatch = 9,
  FailedToInitializeCb = 10,
  FailedToFreeCb = 11,
  FailedToMapCb = 12,
  FailedToUnmapCb = 13,
  FailedToAllocateDeviceMemory = 14,
  FailedToFreeDeviceMemory = 15,
  FailedNotEnoughDevicesFound = 16,
  DeviceReset = 17,
  Unsupported = 18,
  WrongParamsFile = 19,
  DeviceAlreadyAcquired = 20,
  NameIsAlreadyUsed = 21,
  Busy = 22,
  AllResourcesTaken = 23,
  Unavailable = 24,
  InvalidTensorDimensions = 25,
  Fail = 26,
};

// The API's spelling: "synSuccess", "synInvalidArgument", ... ("synStatus(N)" for other values).
std::string status_name(Status status);

struct Result {
  Status status = Status::Success;
  std::string message;   // empty on success
  bool ok() const { return status == Status::Success; }
  static Result success() { return {}; }
  static Result error(Status status, std::string message) { return {status, std::move(message)}; }
};

}  // namespace hpusim::synapse::graph
