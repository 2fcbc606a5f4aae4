/* The public C API of hpusim's Synapse layer: lifecycle, devices, streams, events, memory,
 * graphs, sections, tensors and nodes, compile, launch and recipes, plus hpusim_ extensions.
 * It reaches the simulated card only through the driver's ioctl ABI. Usable from C and C++.
 * Every entry point returns a synStatus; see README.md for the checks and the param structs. */
#ifndef HPUSIM_SYNAPSE_API_H
#define HPUSIM_SYNAPSE_API_H

#include <stdint.h>

#include "synapse_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Graphs. synGraphCreate accepts synDeviceGaudi only (else synInvalidArgument). */
synStatus synGraphCreate(synGraphHandle* graph, synDeviceType deviceType);
/* Also ends the graph's section and tensor handles (tensors not yet used by a node survive). */
synStatus synGraphDestroy(synGraphHandle graph);

/* Sections: user memory. A tensor created in a section is persistent (a graph input or output)
 * and belongs to the section's graph; sectionDescriptor is reserved (0). */
synStatus synSectionCreate(synSectionHandle* section, uint64_t sectionDescriptor, synGraphHandle graph);
synStatus synSectionDestroy(synSectionHandle section);

/* Tensors. With a section the tensor joins that graph at once; without one (section NULL) it is
 * a workspace tensor that joins the graph of the first node that uses it. */
synStatus synTensorCreate(synTensor* tensor, const synTensorDescriptor* descriptor, synSectionHandle section,
                          uint64_t sectionOffset);
/* Ends the handle; a tensor a node already uses stays in its graph. */
synStatus synTensorDestroy(synTensor tensor);

/* Nodes. userParams / paramsSize: hpusim_GemmParams for gemm and batch_gemm,
 * hpusim_ConvolutionParams for spatial_convolution, dedx and dedw, an array of floats (the
 * kernel's scalar parameters) for TPC GUIDs; NULL and 0 for none. inputLayouts / outputLayouts:
 * NULL, or arrays of NULL or empty strings (layouts are not supported). */
synStatus synNodeCreate(synGraphHandle graph, const synTensor* inputs, const synTensor* outputs, uint32_t numInputs,
                        uint32_t numOutputs, const void* userParams, unsigned paramsSize, const char* guid,
                        const char* name, const char** inputLayouts, const char** outputLayouts);
synStatus synNodeCreateWithId(synGraphHandle graph, const synTensor* inputs, const synTensor* outputs,
                              uint32_t numInputs, uint32_t numOutputs, const void* userParams, unsigned paramsSize,
                              const char* guid, const char* name, synNodeId* nodeId, const char** inputLayouts,
                              const char** outputLayouts);

/* ---- lifecycle and devices ----
 * One simulated card per process, device id 0. synDeviceAcquireByDeviceType builds it from the
 * preset named by the HPUSIM_PRESET environment variable (default hl205) with the overrides of
 * HPUSIM_SET ("path=value;path=value"); hpusim_deviceAcquireWithPreset names them itself. */
synStatus synInitialize(void);
/* Releases the device and every object; later calls need synInitialize again. */
synStatus synDestroy(void);
synStatus synDeviceGetCount(uint32_t* count);
synStatus synDeviceAcquireByDeviceType(synDeviceId* deviceId, synDeviceType deviceType);
/* pciBus must be NULL or empty. */
synStatus synDeviceAcquire(synDeviceId* deviceId, const char* pciBus);
synStatus synDeviceRelease(synDeviceId deviceId);
/* Waits for everything submitted on every stream. */
synStatus synDeviceSynchronize(synDeviceId deviceId);
synStatus synDeviceGetMemoryInfo(synDeviceId deviceId, uint64_t* free, uint64_t* total);
synStatus synDeviceGetInfo(synDeviceId deviceId, synDeviceInfo* info);

/* ---- streams and events ----
 * Copy streams run on the external DMA queues (host to device DMA_0_x, device to host DMA_1_x,
 * device to device DMA_0_x); a compute stream's launches end on DMA_0_0. Work on one stream runs
 * in order; across streams, order with events. */
synStatus synStreamCreate(synStreamHandle* stream, synDeviceId deviceId, synStreamType type, uint32_t flags);
synStatus synStreamCreateGeneric(synStreamHandle* stream, synDeviceId deviceId, uint32_t flags);
synStatus synStreamDestroy(synStreamHandle stream);
/* Later work on `stream` starts after what `event` recorded (the host waits for it at the next
 * submission on the stream). */
synStatus synStreamWaitEvent(synStreamHandle stream, synEventHandle event, uint32_t flags);
synStatus synStreamSynchronize(synStreamHandle stream);
/* synSuccess when everything on the stream is done, synBusy otherwise. */
synStatus synStreamQuery(synStreamHandle stream);
/* flags: 0 or EVENT_COLLECT_TIME. */
synStatus synEventCreate(synEventHandle* event, synDeviceId deviceId, uint32_t flags);
synStatus synEventDestroy(synEventHandle event);
synStatus synEventRecord(synEventHandle event, synStreamHandle stream);
synStatus synEventQuery(synEventHandle event);
synStatus synEventSynchronize(synEventHandle event);
/* The device time between two completed events recorded with EVENT_COLLECT_TIME, in ns. */
synStatus synEventElapsedTime(uint64_t* nanoseconds, synEventHandle eventStart, synEventHandle eventEnd);

/* ---- memory ----
 * Host buffers are ordinary memory mapped for the device; device buffers come from the DRAM user
 * range. reqAddr must be 0 and flags 0. */
synStatus synHostMalloc(synDeviceId deviceId, uint64_t size, uint32_t flags, void** buffer);
synStatus synHostFree(synDeviceId deviceId, const void* buffer, uint32_t flags);
synStatus synHostMap(synDeviceId deviceId, uint64_t size, const void* buffer);
synStatus synHostUnmap(synDeviceId deviceId, const void* buffer);
synStatus synDeviceMalloc(synDeviceId deviceId, uint64_t size, uint64_t reqAddr, uint32_t flags, uint64_t* buffer);
synStatus synDeviceFree(synDeviceId deviceId, uint64_t buffer, uint32_t flags);
/* src / dst are host pointers (as uint64_t) or device addresses, as `direction` says. */
synStatus synMemCopyAsync(synStreamHandle stream, uint64_t src, uint64_t size, uint64_t dst, synDmaDir direction);
/* Fill device memory with 8-, 16- or 32-bit values; the byte count must be a multiple of 4. */
synStatus synMemsetD8Async(uint64_t deviceMem, unsigned char value, uint64_t numOfElements, synStreamHandle stream);
synStatus synMemsetD16Async(uint64_t deviceMem, uint16_t value, uint64_t numOfElements, synStreamHandle stream);
synStatus synMemsetD32Async(uint64_t deviceMem, uint32_t value, uint64_t numOfElements, synStreamHandle stream);

/* ---- compile and launch ----
 * synGraphCompile looks the graph up in the recipe cache (PT_HPU_RECIPE_CACHE_CONFIG adds a disk
 * cache) and compiles it on a miss; recipeName and buildLog may be NULL. Errors name the node and
 * tensor (hpusim_lastErrorMessage). A device must be acquired (the recipe is for its card). */
synStatus synGraphCompile(synRecipeHandle* recipe, synGraphHandle graph, const char* recipeName, const char* buildLog);
synStatus synWorkspaceGetSize(uint64_t* size, synRecipeHandle recipe);
/* Every persistent tensor of the recipe by name, each inside a device allocation; the workspace
 * at least synWorkspaceGetSize bytes (0 when that is 0). */
synStatus synLaunch(synStreamHandle stream, const synLaunchTensorInfo* launchTensorsInfo, uint32_t numberOfTensors,
                    uint64_t pWorkspace, synRecipeHandle recipe, uint32_t flags);
synStatus synRecipeDestroy(synRecipeHandle recipe);
/* A checksummed file (synapse/recipe/recipe_file.h); a corrupt or truncated file is refused
 * with synInvalidArgument naming the problem. */
synStatus synRecipeSerialize(synRecipeHandle recipe, const char* fileName);
synStatus synRecipeDeSerialize(synRecipeHandle* recipe, const char* fileName);

/* hpusim extensions. */

/* Acquires device 0 built from `preset` (a built-in name or a file) with `overrides`
 * ("path=value;path=value", NULL for none). */
synStatus hpusim_deviceAcquireWithPreset(synDeviceId* deviceId, const char* preset, const char* overrides);
synStatus hpusim_compileCounters(hpusim_CompileCounters* counters);
synStatus hpusim_launchCounters(hpusim_LaunchCounters* counters);
/* Before the device is acquired: the timeline (driver, card, and the API's compile, cache and
 * launch spans with flows to each launch's device span) goes to `path` when the device is
 * released (Chrome JSON for a ".json" name, Perfetto otherwise; NULL or "" for none). */
synStatus hpusim_traceToFile(const char* path);
/* Starts (on != 0) or stops recording on the platform's timeline, whether or not the run writes
 * a trace file (a profiler records only while it profiles); *wasRecording (may be NULL) tells
 * whether it recorded before. synNoDeviceFound before the platform is up. */
synStatus hpusim_traceSetRecording(int on, int* wasRecording);
/* Writes everything the timeline recorded so far to `path` as Chrome JSON (the trace file, if
 * any, is still written at the end). */
synStatus hpusim_traceWriteChromeJson(const char* path);
/* Drops everything the timeline recorded so far (a profiler's window, once written out); its
 * tracks stay. Do not call it in a run that writes a trace file: that file would lose them. */
synStatus hpusim_traceDiscard(void);
/* The host clock now (modeled by default: deterministic), in ns. */
synStatus hpusim_hostTimeNs(uint64_t* nanoseconds);
/* Host work of a framework above Synapse on device `deviceId`: `count` times the preset's cost of
 * `work` charged to the calling thread's host clock, and a slice named `what` on the device's
 * "host: framework" timeline track. */
synStatus hpusim_hostWork(synDeviceId deviceId, hpusim_HostWork work, uint64_t count, const char* what);
/* A slice named `name` on the calling thread's "host: framework" track of device `deviceId`, from
 * host time `startNanoseconds` (hpusim_hostTimeNs) to now: a framework's steps, flushes, replays
 * and waits on the timeline. Nothing is charged; without a trace it does nothing. */
synStatus hpusim_traceSpan(synDeviceId deviceId, const char* name, uint64_t startNanoseconds);
/* How long device `deviceId` has been busy (ns) with the submissions completed so far (launches,
 * copies: the union of their intervals from the doorbells to the completion MSI, one queued behind
 * another counting from when the device reached it). One driver INFO ioctl, charged as any. */
synStatus hpusim_deviceBusyNs(synDeviceId deviceId, uint64_t* busyNanoseconds);
/* Completed launches so far, and the device time of the last (ns): from its submission's return,
 * the doorbells rung, to its completion MSI (the driver's time stamp). */
synStatus hpusim_lastLaunchDeviceTime(uint64_t* nanoseconds);
/* The host times (ns) at which the last launch's submission returned and its completion MSI
 * arrived (waits for it). */
synStatus hpusim_lastLaunchWindowNs(uint64_t* submitted, uint64_t* completed);

/* Checks the whole graph; the first problem's status, its message in hpusim_lastErrorMessage. */
synStatus hpusim_graphValidate(synGraphHandle graph);
/* The graph's structural hash: the recipe cache's key (equal to the graph model's). */
synStatus hpusim_graphStructuralHash(synGraphHandle graph, uint64_t* hash);
/* The message of this thread's last failed call ("" after a successful one). Valid until the
 * thread's next call. */
const char* hpusim_lastErrorMessage(void);

#ifdef __cplusplus
}
#endif

#endif /* HPUSIM_SYNAPSE_API_H */
