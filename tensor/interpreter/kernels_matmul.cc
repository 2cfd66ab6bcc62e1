// Reference kernels: MatMul, Gemm and the blocked product under them (and
// under the convolutions).
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor {

namespace {

// Blocks of B stay in cache while the rows of A stream past them.
constexpr std::int64_t kBlockN = 512, kBlockK = 128;

// C[rows, cols] += A[rows, k] * B[k, cols] for a tile of C whose rows are
// `ld` apart (as are B's). Four rows of C at a time share each row of B
// that is read.
void gemm_tile(const float* a, const float* b, float* c, std::int64_t rows, std::int64_t cols,
               std::int64_t k, std::int64_t ld) {
  for (std::int64_t k0 = 0; k0 < k; k0 += kBlockK) {
    const std::int64_t kn = std::min(kBlockK, k - k0);
    std::int64_t i = 0;
    for (; i + 4 <= rows; i += 4) {
      float* __restrict c0 = c + i * ld;
      float* __restrict c1 = c0 + ld;
      float* __restrict c2 = c1 + ld;
      float* __restrict c3 = c2 + ld;
      const float* a0 = a + i * k + k0;
      for (std::int64_t p = 0; p < kn; ++p) {
        const float v0 = a0[p], v1 = a0[k + p], v2 = a0[2 * k + p], v3 = a0[3 * k + p];
        const float* __restrict brow = b + (k0 + p) * ld;
        for (std::int64_t j = 0; j < cols; ++j) {
          const float bv = brow[j];
          c0[j] += v0 * bv;
          c1[j] += v1 * bv;
          c2[j] += v2 * bv;
          c3[j] += v3 * bv;
        }
      }
    }
    for (; i < rows; ++i) {
      float* __restrict crow = c + i * ld;
      const float* arow = a + i * k + k0;
      for (std::int64_t p = 0; p < kn; ++p) {
        const float av = arow[p];
        const float* __restrict brow = b + (k0 + p) * ld;
        for (std::int64_t j = 0; j < cols; ++j) crow[j] += av * brow[j];
      }
    }
  }
}

}  // namespace

void gemm_accumulate(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n,
                     std::int64_t k) {
  for (std::int64_t j0 = 0; j0 < n; j0 += kBlockN)
    gemm_tile(a, b + j0, c + j0, m, std::min(kBlockN, n - j0), k, n);
}

namespace kernels {

namespace {

// A transposed copy of a row-major [rows x cols] matrix.
std::vector<float> transposed(const float* m, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) t[j * rows + i] = m[i * cols + j];
  }
  return t;
}

// C += A * B, its tiles (up to 64 rows by one column block) computed in
// parallel: a few rows with many columns (a transformer's projections) split
// by columns, so that each thread reads its part of B once, not per row.
void gemm_parallel(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n,
                   std::int64_t k) {
  constexpr std::int64_t kTileRows = 64;
  const std::int64_t row_tiles = (m + kTileRows - 1) / kTileRows;
  const std::int64_t col_tiles = (n + kBlockN - 1) / kBlockN;
  const std::int64_t tile_work = std::min(m, kTileRows) * std::min(n, kBlockN) * k;
  const std::int64_t grain = std::max<std::int64_t>(1, (1 << 20) / std::max<std::int64_t>(1, tile_work));
  parallel(row_tiles * col_tiles, grain, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t t = s; t < e; ++t) {
      const std::int64_t i0 = t / col_tiles * kTileRows, j0 = t % col_tiles * kBlockN;
      gemm_tile(a + i0 * k, b + j0, c + i0 * n + j0, std::min(kTileRows, m - i0),
                std::min(kBlockN, n - j0), k, n);
    }
  });
}

}  // namespace

Tensor matmul(const Tensor& x, const Tensor& y) {
  const Dims& da = x.dims();
  const Dims& db = y.dims();
  std::int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
  Dims batch_a(da.begin(), da.end() - 2), batch_b(db.begin(), db.end() - 2);
  Dims batch = *broadcast_dims(batch_a, batch_b);
  Dims out_dims = batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor out(TensorType{DType::kFloat32, out_dims});
  const float* a = x.floats().data();
  const float* b = y.floats().data();
  float* c = out.mutable_floats().data();
  std::vector<std::int64_t> offs_a, offs_b;
  for_each_index(batch, broadcast_strides(batch_a, batch), broadcast_strides(batch_b, batch),
                 [&](std::int64_t, std::int64_t ia, std::int64_t ib) {
                   offs_a.push_back(ia);
                   offs_b.push_back(ib);
                 });
  if (batch.empty()) {
    offs_a = {0};
    offs_b = {0};
  }
  std::int64_t nb = static_cast<std::int64_t>(offs_a.size());
  if (nb == 1) {
    gemm_parallel(a, b, c, m, n, k);
    return out;
  }
  parallel(nb, 1, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t i = s; i < e; ++i) {
      gemm_accumulate(a + offs_a[i] * m * k, b + offs_b[i] * k * n, c + i * m * n, m, n, k);
    }
  });
  return out;
}

Tensor gemm(const Attributes& attrs, std::span<const Tensor> in) {
  bool ta = *attrs.get_int("transA") != 0, tb = *attrs.get_int("transB") != 0;
  float alpha = static_cast<float>(*attrs.get_float("alpha"));
  float beta = static_cast<float>(*attrs.get_float("beta"));
  const Dims& da = in[0].dims();
  const Dims& db = in[1].dims();
  std::int64_t m = da[ta ? 1 : 0], k = da[ta ? 0 : 1], n = db[tb ? 0 : 1];
  std::vector<float> at, bt;
  const float* a = in[0].floats().data();
  const float* b = in[1].floats().data();
  if (ta) a = (at = transposed(a, k, m)).data();
  if (tb) b = (bt = transposed(b, n, k)).data();
  Tensor out(TensorType{DType::kFloat32, {m, n}});
  std::span<float> c = out.mutable_floats();
  gemm_parallel(a, b, c.data(), m, n, k);
  Ints strides = in.size() == 3 ? broadcast_strides(in[2].dims(), Dims{m, n}) : Ints{0, 0};
  std::span<const float> bias = in.size() == 3 ? in[2].floats() : std::span<const float>();
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float add = bias.empty() ? 0.0f : beta * bias[i * strides[0] + j * strides[1]];
      c[i * n + j] = alpha * c[i * n + j] + add;
    }
  }
  return out;
}

}  // namespace kernels

}  // namespace saturn::tensor
