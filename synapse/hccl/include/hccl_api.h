/* hpusim's HCCL: collectives between the cards of a box, in the style of Habana's HCCL (and
 * NCCL): a communicator per rank, each rank on its own card, each collective enqueued on a Synapse
 * stream of that card and run by its NIC ports and DMA engines (synapse/hccl/README.md).
 *
 *   hcclUniqueId id;  hcclGetUniqueId(&id);
 *   hcclComm_t comm;  hcclCommInitRank(&comm, nranks, id, rank);   // rank r on device r
 *   hcclAllReduce(send, recv, count, hcclFloat32, hcclSum, comm, stream);
 *   synStreamSynchronize(stream);
 *
 * Buffers are device addresses (synDeviceMalloc's) passed as pointers, as HCCL takes them. */
#ifndef HPUSIM_HCCL_API_H
#define HPUSIM_HCCL_API_H

#include <stddef.h>
#include <stdint.h>

#include "synapse_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HCCL_MAJOR 1
#define HCCL_MINOR 0
#define HCCL_PATCH 0
#define HCCL_VERSION_CODE (HCCL_MAJOR * 10000 + HCCL_MINOR * 100 + HCCL_PATCH)

typedef enum {
  hcclSuccess = 0,
  hcclUnhandledSynapseError = 1, /* the device failed it (e.g. a peer never arrived: timeout and reset) */
  hcclSystemError = 2,
  hcclInternalError = 3,
  hcclInvalidArgument = 4,
  hcclInvalidUsage = 5,
  hcclNumResults = 6
} hcclResult_t;

typedef enum {
  hcclInt8 = 0, hcclChar = 0, hcclUint8 = 1, hcclInt32 = 2, hcclInt = 2, hcclUint32 = 3, hcclInt64 = 4,
  hcclUint64 = 5, hcclFloat16 = 6, hcclHalf = 6, hcclFloat32 = 7, hcclFloat = 7, hcclFloat64 = 8, hcclDouble = 8,
  hcclBfloat16 = 9, hcclNumTypes = 10
} hcclDataType_t;

typedef enum { hcclSum = 0, hcclProd = 1, hcclMax = 2, hcclMin = 3, hcclAvg = 4, hcclNumOps = 5 } hcclRedOp_t;

#define HCCL_UNIQUE_ID_BYTES 1024
typedef struct {
  char internal[HCCL_UNIQUE_ID_BYTES];
  size_t length;
} hcclUniqueId;

typedef struct hcclOpaqueComm* hcclComm_t;

hcclResult_t hcclGetVersion(int* version);
const char* hcclGetErrorString(hcclResult_t result);
/* The message of the last failed call of this thread ("" if none). */
const char* hcclGetLastErrorMessage(void);

/* An id whose communicator puts rank i on the box's card i. */
hcclResult_t hcclGetUniqueId(hcclUniqueId* uniqueId);
/* hpusim: an id whose communicator puts rank i on the box's card cards[i] (nranks distinct cards):
 * ranks on a part of the box, as torch.distributed's new_group makes them. The real HCCL learns
 * each rank's card when the ranks meet; hpusim's ranks do not meet on the host, so the id says. */
hcclResult_t hcclGetUniqueIdOnCards(hcclUniqueId* uniqueId, int nranks, const int* cards);
/* Rank `rank` of `nranks` on its card (card `rank`, or the id's cards[rank]): that card's Synapse
 * device, acquired before. Their NIC links come from the box preset. */
hcclResult_t hcclCommInitRank(hcclComm_t* comm, int nranks, hcclUniqueId commId, int rank);
/* One communicator per device of `devlist` (distinct devices, rank i on devlist[i]; NULL: devices
 * 0 .. ndev-1). */
hcclResult_t hcclCommInitAll(hcclComm_t* comms, int ndev, const int* devlist);
/* Waits for the communicator's collectives in flight, frees its scratch memory. */
hcclResult_t hcclCommDestroy(hcclComm_t comm);
hcclResult_t hcclCommCount(hcclComm_t comm, int* count);
hcclResult_t hcclCommUserRank(hcclComm_t comm, int* rank);
hcclResult_t hcclCommSynDevice(hcclComm_t comm, int* device);

/* Collectives: enqueued on `stream` (of the rank's device), ordered after its earlier work.
 * f32 and bf16; sum, min, max. In place where HCCL allows it: recvbuff == sendbuff for
 * all_reduce, broadcast and reduce (not all_to_all); recvbuff == sendbuff + rank * recvcount for
 * reduce_scatter; sendbuff == recvbuff + rank * sendcount for all_gather. */
hcclResult_t hcclAllReduce(const void* sendbuff, void* recvbuff, size_t count, hcclDataType_t datatype,
                           hcclRedOp_t reduceOp, hcclComm_t comm, synStreamHandle stream);
hcclResult_t hcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, hcclDataType_t datatype,
                               hcclRedOp_t reduceOp, hcclComm_t comm, synStreamHandle stream);
hcclResult_t hcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, hcclDataType_t datatype,
                           hcclComm_t comm, synStreamHandle stream);
hcclResult_t hcclBroadcast(const void* sendbuff, void* recvbuff, size_t count, hcclDataType_t datatype, int root,
                           hcclComm_t comm, synStreamHandle stream);
hcclResult_t hcclReduce(const void* sendbuff, void* recvbuff, size_t count, hcclDataType_t datatype,
                        hcclRedOp_t reduceOp, int root, hcclComm_t comm, synStreamHandle stream);
/* `count` elements to each rank: sendbuff holds nranks x count, so does recvbuff. */
hcclResult_t hcclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, hcclDataType_t datatype,
                          hcclComm_t comm, synStreamHandle stream);
/* Point to point: `count` elements to / from rank `peer`, striped over the links joining the two
 * cards. A pair's sends and receives pair up in the order both ranks issue them.
 * Between hcclGroupStart and hcclGroupEnd calls are gathered and submitted together at the end,
 * one submission per stream: sends and receives in a cycle do not wait on each other, and
 * collectives (not those of a communicator across boxes) run one after the other per
 * communicator, before the group's sends and receives on the same links. */
hcclResult_t hcclGroupStart(void);
hcclResult_t hcclGroupEnd(void);
hcclResult_t hcclSend(const void* sendbuff, size_t count, hcclDataType_t datatype, int peer, hcclComm_t comm,
                      synStreamHandle stream);
hcclResult_t hcclRecv(void* recvbuff, size_t count, hcclDataType_t datatype, int peer, hcclComm_t comm,
                      synStreamHandle stream);
/* hpusim: the stream goes on once every rank's stream has reached its barrier. */
hcclResult_t hcclBarrier(hcclComm_t comm, synStreamHandle stream);

#ifdef __cplusplus
}
#endif

#endif
