#include "synapse/graph/status.h"

namespace hpusim::synapse::graph {

std::string status_name(Status status) {
  switch (status) {
    case Status::Success: return "synSuccess";
    case Status::InvalidArgument: return "synInvalidArgument";
    case Status::CbFull: return "synCbFull";
    case Status::OutOfHostMemory: return "synOutOfHostMemory";
    case Status::OutOfDeviceMemory: return "synOutOfDeviceMemory";
    case Status::ObjectAlreadyInitialized: return "synObjectAlreadyInitialized";
    case Status::ObjectNotInitialized: return "synObjectNotInitialized";
    case Status::CommandSubmissionFailure: return "synCommandSubmissionFailure";
    case Status::NoDeviceFound: return "synNoDeviceFound";
    case Status::DeviceTypeMismatch: return "synDeviceTypeMismatch";
    case Status::FailedToInitializeCb: return "synFailedToInitializeCb";
    case Status::FailedToFreeCb: return "synFailedToFreeCb";
    case Status::FailedToMapCb: return "synFailedToMapCb";
    case Status::FailedToUnmapCb: return "synFailedToUnmapCb";
    case Status::FailedToAllocateDeviceMemory: return "synFailedToAllocateDeviceMemory";
    case Status::FailedToFreeDeviceMemory: return "synFailedToFreeDeviceMemory";
    case Status::FailedNotEnoughDevicesFound: return "synFailedNotEnoughDevicesFound";
    case Status::DeviceReset: return "synDeviceReset";
    case Status::Unsupported: return "synUnsupported";
    case Status::WrongParamsFile: return "synWrongParamsFile";
    case Status::DeviceAlreadyAcquired: return "synDeviceAlreadyAcquired";
    case Status::NameIsAlreadyUsed: return "synNameIsAlreadyUsed";
    case Status::Busy: return "synBusy";
    case Status::AllResourcesTaken: return "synAllResourcesTaken";
    case Status::Unavailable: return "synUnavailable";
    case Status::InvalidTensorDimensions: return "synInvalidTensorDimensions";
    case Status::Fail: return "synFail";
  }
  return "synStatus(" + std::to_string(static_cast<unsigned>(status)) + ")";
}

}  // namespace hpusim::synapse::graph
