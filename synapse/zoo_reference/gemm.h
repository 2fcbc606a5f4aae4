// The MME's GEMM arithmetic (hw/mme/README.md, "Arithmetic") and the linear layers built on it.
// Every output element starts from +0 and adds the products of k = 0 .. K-1 in order, the product
// and the sum each rounded (no FMA: this library is compiled with -ffp-contract=off).
#pragma once

#include <cstddef>

namespace hpusim::synapse::zoo_reference {

// C[m x n] = A[m x k] B[k x n], row-major. trans_a: A is stored k x m; trans_b: B is stored n x k
// (a transpose moves values, it changes no arithmetic). Float and double.
template <class T>
void gemm(const T* a, const T* b, T* c, size_t m, size_t n, size_t k, bool trans_a, bool trans_b);

// A PyTorch linear layer on rows of `in` features: y[rows x out] = x W^T, then + bias (a gemm with
// transpose_b, then add_fwd broadcasting the bias). w is [out, in] row-major, as PyTorch's.
template <class T>
void linear(const T* x, const T* w, const T* bias, T* y, size_t rows, size_t in, size_t out);

// Its backward: dw = dy^T x (k = the rows, in order), db = reduce_sum of dy over the rows
// (sequential), dx = dy W (k = out, in order) unless dx is null.
void linear_bwd(const float* dy, const float* x, const float* w, float* dx, float* dw, float* db, size_t rows,
                size_t in, size_t out);

}  // namespace hpusim::synapse::zoo_reference
