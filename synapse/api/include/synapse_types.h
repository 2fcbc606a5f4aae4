/* The types of hpusim's public Synapse C API: status codes, device and data types, handles, the
 * tensor descriptor and the node param structs. */
#ifndef HPUSIM_SYNAPSE_TYPES_H
#define HPUSIM_SYNAPSE_TYPES_H

#include <stdint.h>

#define SYN_MAX_TENSOR_DIM 5 /* MAX_DIMENSIONS_NUM */

/* C++ sees every enum of the API with int as its underlying type, the type a C caller passes:
 * an out-of-range value (synDeviceType 99) is then a value the library can check and refuse,
 * not undefined behaviour. */
#ifdef __cplusplus
#define SYN_ENUM_BASE : int
#else
#define SYN_ENUM_BASE
#endif

typedef enum SYN_ENUM_BASE {
  synSuccess = 0,
  synInvalidArgument = 1,
  synCbFull = 2,
  synOutOfHostMemory = 3,
  synOutOfDeviceMemory = 4,
  synObjectAlreadyInitialized = 5,
  synObjectNotInitialized = 6,
  synCommandSubmissionFailure = 7,
  synNoDeviceFound = 8,
  synDeviceTypeMismatch = 9,
  synFailedToInitializeCb = 10,
  synFailedToFreeCb = 11,
  synFailedToMapCb = 12,
  synFailedToUnmapCb = 13,
  synFailedToAllocateDeviceMemory = 14,
  synFailedToFreeDeviceMemory = 15,
  synFailedNotEnoughDevicesFound = 16,
  synDeviceReset = 17,
  synUnsupported = 18,
  synWrongParamsFile = 19,
  synDeviceAlreadyAcquired = 20,
  synNameIsAlreadyUsed = 21,
  synBusy = 22,
  synAllResourcesTaken = 23,
  synUnavailable = 24,
  synInvalidTensorDimensions = 25,
  synFail = 26
} synStatus;

typedef enum SYN_ENUM_BASE {
  synDeviceGoya = 0,
  synDeviceGreco = 1,
  synDeviceGaudi = 2,
  synDeviceGaudi2 = 4,
  synDeviceGaudi3 = 5,
  synDeviceEmulator = 6,
  synDeviceTypeInvalid = 7
} synDeviceType;

/* Bit flags, as the API numbers them. */
typedef enum SYN_ENUM_BASE {
  syn_type_na = 0,
  syn_type_fixed = 1,
  syn_type_int8 = syn_type_fixed,
  syn_type_bf16 = 2,
  syn_type_single = 4,
  syn_type_float = syn_type_single,
  syn_type_int16 = 8,
  syn_type_int32 = 16,
  syn_type_uint8 = 32,
  syn_type_uint16 = 512,
  syn_type_uint32 = 1024
} synDataType;

/* Only DATA_TENSOR is supported. */
typedef enum SYN_ENUM_BASE { DATA_TENSOR = 0 } synTensorType;

/* Opaque handles; a destroyed handle is never handed out again. */
typedef struct hpusim_GraphObject* synGraphHandle;
typedef struct hpusim_SectionObject* synSectionHandle;
typedef struct hpusim_TensorObject* synTensor;
typedef uint64_t synNodeId;

/* Zero-initialize, then fill. m_sizes[0] is the innermost (contiguous) dim; m_dims 0..5 (0: one
 * element). m_ptr (constant data), m_strides (non-dense) and m_minSizes other than 0 or m_sizes
 * (dynamic shapes) are not supported. */
typedef struct {
  synDataType m_dataType;
  unsigned m_dims;
  unsigned m_sizes[SYN_MAX_TENSOR_DIM];
  void* m_ptr;
  const char* m_name;
  unsigned m_strides[SYN_MAX_TENSOR_DIM];
  unsigned m_minSizes[SYN_MAX_TENSOR_DIM];
  synTensorType m_tensorType;
} synTensorDescriptor;

/* The params of gemm and batch_gemm: each flag 0 or 1. */
typedef struct {
  uint8_t transpose_a;
  uint8_t transpose_b;
} hpusim_GemmParams;

/* The params of spatial_convolution, dedx and dedw; every field must be set (stride and dilation
 * 1 .. 65535, pad 0 .. 65535). */
typedef struct {
  int64_t stride_h;
  int64_t stride_w;
  int64_t pad_h;
  int64_t pad_w;
  int64_t dil_h;
  int64_t dil_w;
} hpusim_ConvolutionParams;

/* ---- devices, streams, events, memory, recipes ---- */

typedef uint32_t synDeviceId;
typedef uint32_t synModuleId;
typedef struct hpusim_StreamObject* synStreamHandle;
typedef struct hpusim_EventObject* synEventHandle;
typedef struct hpusim_RecipeObject* synRecipeHandle;

typedef struct {
  uint64_t sramBaseAddress;
  uint64_t dramBaseAddress;
  uint32_t sramSize;
  uint64_t dramSize;
  uint64_t tpcEnabledMask;
  uint8_t dramEnabled;
  uint32_t deviceId;
  uint32_t fd;
  synDeviceType deviceType;
} synDeviceInfo;

typedef enum SYN_ENUM_BASE { HOST_TO_DRAM = 0, DRAM_TO_HOST = 1, DRAM_TO_DRAM = 2 } synDmaDir;

typedef enum SYN_ENUM_BASE {
  STREAM_TYPE_COPY_DEVICE_TO_HOST = 0,
  STREAM_TYPE_COPY_HOST_TO_DEVICE = 1,
  STREAM_TYPE_COPY_DEVICE_TO_DEVICE = 2,
  STREAM_TYPE_COMPUTE = 3,
  STREAM_TYPE_NETWORK_COLLECTIVE = 4
} synStreamType;

#define EVENT_COLLECT_TIME 1u

/* A persistent tensor's address for synLaunch, by name (tensorId is not used). */
typedef enum SYN_ENUM_BASE { HOST_TO_DEVICE_TENSOR = 0, OUTPUT_TENSOR = 1, INPUT_TENSOR = 2 } synTensorTypeLaunch;
typedef struct {
  const char* tensorName;
  uint64_t pTensorAddress;
  synTensorType tensorType;
  unsigned tensorSize[SYN_MAX_TENSOR_DIM];
  uint64_t tensorId;
} synLaunchTensorInfo;

/* hpusim: the compile and cache counters of this process (hpusim_compileCounters). */
typedef struct {
  uint64_t compiles;
  uint64_t cacheHits;
  uint64_t cacheMisses;
  uint64_t corruptRecipes;
  uint64_t compileNanoseconds;
  uint64_t compiledNodes;         /* nodes of the graphs compiled (not of cache hits) */
} hpusim_CompileCounters;

/* hpusim: what launches cost the host (hpusim_launchCounters). */
typedef struct {
  uint64_t launches;
  uint64_t patches;               /* patch points written */
  uint64_t hostNanoseconds;       /* modeled host time inside synLaunch, without a first launch's
                                     loading of the recipe */
  uint64_t prepareNanoseconds;    /* measured wall time preparing launches (checks, patching,
                                     command buffers), without the driver's submit */
} hpusim_LaunchCounters;

/* hpusim: host work of a framework above Synapse (hpusim_hostWork), priced by the preset's host
 * cost table. */
typedef enum {
  HPUSIM_HOST_OP_RECORD = 0,            /* op_record_ns: one op recorded (lazy) or dispatched */
  HPUSIM_HOST_EAGER_OP = 1,             /* eager_op_ns: an eager op's dispatch beyond recording */
  HPUSIM_HOST_GRAPH_BUILD_PER_NODE = 2, /* graph_build_per_node_ns: a node made into graph calls */
  HPUSIM_HOST_CPU_FALLBACK_OP = 3,      /* cpu_fallback_op_ns: one op run on the host CPU */
  HPUSIM_HOST_GRAPH_REPLAY = 4,         /* graph_replay_ns: one HPU graph replayed */
  HPUSIM_HOST_WORK_INT32 = 0x7fffffff   /* not a kind of work: makes any int a caller passes a value of
                                           this type, so a wrong one is an error, not undefined */
} hpusim_HostWork;

#endif /* HPUSIM_SYNAPSE_TYPES_H */
