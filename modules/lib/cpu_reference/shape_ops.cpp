// shape_ops.cpp — reshape, transpose, concat, slice, gather and sort, forward
// and gradient. Data movement is exact (bytes are copied, so any dtype works
// forward); the only arithmetic is gather's gradient, a canonical binary64
// sum per table row, and sort's comparisons.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "cpu_reference.hpp"

namespace cpu_driver {

void check_reshape(const Call& c) {
  c.expect_counts(1, 1);
  c.expect_out_dtype(0, c.in[0].dtype);
  if (c.out[0].numel != c.in[0].numel)
    c.shape_error(c.out_name(0) + " " + shape_string(c.out[0].dims) + " has " + std::to_string(c.out[0].numel) +
                  " elements, " + c.in_name(0) + " " + shape_string(c.in[0].dims) + " has " +
                  std::to_string(c.in[0].numel));
}

void check_reshape_grad(const Call& c) {
  c.expect_counts(2, 1);
  c.expect_in_dtype(1, c.in[0].dtype);
  c.expect_out_dtype(0, c.in[0].dtype);
  c.expect_out_shape(0, c.in[0].dims);
  if (c.in[1].numel != c.in[0].numel)
    c.shape_error(c.in_name(1) + " " + shape_string(c.in[1].dims) + " has " + std::to_string(c.in[1].numel) +
                  " elements, expected " + std::to_string(c.in[0].numel));
}

namespace {

// ---------------------------------------------------------------- reshape

// A reshape's bytes, copied by the pool's threads in 64 KiB pieces: with
// two threads the input was mostly written by both (a product splits its
// columns), and one thread alone waited on the other core's lines.
// An in-place reshape has nothing to move; buffers that overlap otherwise
// are moved by one memmove.
void copy_bytes(ThreadPool& pool, uint8_t* dst, const uint8_t* src, size_t bytes) {
  if (dst == src || bytes == 0) return;
  if (dst < src + bytes && src < dst + bytes) {
    std::memmove(dst, src, bytes);
    return;
  }
  constexpr int64_t kPiece = int64_t(1) << 16;
  const int64_t pieces = (static_cast<int64_t>(bytes) + kPiece - 1) / kPiece;
  pool.parallel_for(pieces, 2, [&](int64_t p0, int64_t p1) {
    const size_t b0 = static_cast<size_t>(p0 * kPiece), b1 = std::min(bytes, static_cast<size_t>(p1 * kPiece));
    std::memcpy(dst + b0, src + b0, b1 - b0);
  });
}

void reshape_entry(Call& c) {
  check_reshape(c);
  copy_bytes(*c.pool, c.out[0].data, c.in[0].data, c.in[0].bytes());
}

void reshape_grad_entry(Call& c) {
  check_reshape_grad(c);
  copy_bytes(*c.pool, c.out[0].data, c.in[1].data, c.in[1].bytes());
}

// ---------------------------------------------------------------- transpose

std::vector<int> parse_perm(const Call& c, int rank) {
  std::vector<int> perm;
  std::string s = c.attr_string("perm", "");
  if (s.empty()) {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0')
      fail(UMLOS_INVALID_ARGUMENT,
           c.primitive + ": attribute 'perm' = \"" + s + "\" is not a comma-separated list of axes");
    perm.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  std::vector<int> seen(rank, 0);
  bool ok = static_cast<int>(perm.size()) == rank;
  for (int p : perm) {
    if (p < 0 || p >= rank || seen[p])
      ok = false;
    else
      seen[p] = 1;
  }
  if (!ok)
    c.shape_error("attribute 'perm' = \"" + s + "\" is not a permutation of the " + std::to_string(rank) + " axes of " +
                  c.in_name(0));
  return perm;
}

// out[...] = in permuted: out axis k is in axis perm[k]. Any element size.
// Trailing axes the permutation keeps in place (perm[k] == k from the last
// axis down) are contiguous in both tensors: each of their blocks is one
// copy (an attention layout change [T, H, d] -> [H, T, d] moves rows of
// d), and the index walk runs over the other axes only. Data movement only:
// the bytes are the same whichever way they are moved.
void permute(ThreadPool& pool, const Operand& in, const std::vector<int>& perm, uint8_t* out) {
  const int full_rank = in.rank();
  const size_t es = dtype_size(in.dtype);
  int rank = full_rank;
  int64_t run = 1;  // elements per contiguous block
  while (rank > 0 && perm[rank - 1] == rank - 1) {
    run *= in.dims[rank - 1];
    --rank;
  }
  if (run == 0) return;
  const size_t block = es * static_cast<size_t>(run);
  std::vector<int64_t> in_stride(full_rank, 1), out_dims(rank), src_stride(rank);
  for (int k = full_rank - 1; k > 0; --k) in_stride[k - 1] = in_stride[k] * in.dims[k];
  for (int k = 0; k < rank; ++k) {
    out_dims[k] = in.dims[perm[k]];
    src_stride[k] = in_stride[perm[k]];
  }
  const int64_t blocks = in.numel / run;
  pool.parallel_for(blocks, std::max<int64_t>(1, (int64_t(1) << 14) / run), [&](int64_t s, int64_t e) {
    std::vector<int64_t> idx(rank);
    int64_t rem = s, off = 0;
    for (int k = rank - 1; k >= 0; --k) {
      idx[k] = rem % out_dims[k];
      rem /= out_dims[k];
      off += idx[k] * src_stride[k];
    }
    for (int64_t p = s; p < e; ++p) {
      if (es == 4 && run == 1)
        std::memcpy(out + p * 4, in.data + off * 4, 4);
      else if (es == 8 && run == 1)
        std::memcpy(out + p * 8, in.data + off * 8, 8);
      else
        std::memcpy(out + static_cast<size_t>(p) * block, in.data + static_cast<size_t>(off) * es, block);
      for (int k = rank - 1; k >= 0; --k) {
        ++idx[k];
        off += src_stride[k];
        if (idx[k] < out_dims[k]) break;
        off -= src_stride[k] * idx[k];
        idx[k] = 0;
      }
    }
  });
}

void transpose_entry(Call& c) {
  c.expect_counts(1, 1);
  c.expect_out_dtype(0, c.in[0].dtype);
  std::vector<int> perm = parse_perm(c, c.in[0].rank());
  std::vector<int64_t> dims;
  for (int p : perm) dims.push_back(c.in[0].dims[p]);
  c.expect_out_shape(0, dims);
  if (c.in[0].numel) permute(*c.pool, c.in[0], perm, c.out[0].data);
}

void transpose_grad_entry(Call& c) {
  c.expect_counts(2, 1);
  c.expect_in_dtype(1, c.in[0].dtype);
  c.expect_out_dtype(0, c.in[0].dtype);
  std::vector<int> perm = parse_perm(c, c.in[0].rank());
  std::vector<int64_t> dims;
  for (int p : perm) dims.push_back(c.in[0].dims[p]);
  c.expect_in_shape(1, dims);
  c.expect_out_shape(0, c.in[0].dims);
  std::vector<int> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[perm[k]] = static_cast<int>(k);
  if (c.in[0].numel) permute(*c.pool, c.in[1], inverse, c.out[0].data);
}

// ---------------------------------------------------------------- concat

// Checks the parts against each other; returns the concatenated dims.
std::vector<int64_t> concat_dims(const Call& c, size_t n_parts, int& axis) {
  const Operand& first = c.in[0];
  if (first.rank() < 1) c.shape_error(c.in_name(0) + ": cannot concatenate scalars");
  axis = c.normalize_axis(c.attr_int("axis", 0), first.rank(), "axis");
  std::vector<int64_t> dims = first.dims;
  dims[axis] = 0;
  for (size_t i = 0; i < n_parts; ++i) {
    const Operand& p = c.in[i];
    if (p.dtype != first.dtype)
      c.shape_error(c.in_name(i) + ": dtype " + dtype_name(p.dtype) + " differs from " + c.in_name(0) + "'s " +
                    dtype_name(first.dtype));
    bool ok = p.rank() == first.rank();
    for (int k = 0; ok && k < first.rank(); ++k)
      if (k != axis && p.dims[k] != first.dims[k]) ok = false;
    if (!ok)
      c.shape_error(c.in_name(i) + ": shape " + shape_string(p.dims) + " does not match " + c.in_name(0) + " " +
                    shape_string(first.dims) + " outside axis " + std::to_string(axis));
    dims[axis] += p.dims[axis];
  }
  return dims;
}

// Copies between the whole [outer, total, inner] and part i's [outer, len_i, inner].
void concat_copy(ThreadPool& pool, const std::vector<int64_t>& whole_dims, int axis, const std::vector<int64_t>& lens,
                 size_t es, uint8_t* whole, const std::vector<uint8_t*>& parts, bool to_whole) {
  int64_t outer = dims_product(whole_dims, 0, axis);
  int64_t inner = dims_product(whole_dims, axis + 1, whole_dims.size());
  int64_t total = whole_dims[axis];
  pool.parallel_for(outer, 16, [&](int64_t s, int64_t e) {
    for (int64_t o = s; o < e; ++o) {
      int64_t at = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        int64_t n = lens[i] * inner;
        uint8_t* w = whole + (o * total + at) * inner * es;
        uint8_t* p = parts[i] + o * n * es;
        if (to_whole)
          std::memcpy(w, p, n * es);
        else
          std::memcpy(p, w, n * es);
        at += lens[i];
      }
    }
  });
}

void concat_entry(Call& c) {
  c.expect_counts(1, SIZE_MAX, 1, 1);
  int axis = 0;
  std::vector<int64_t> dims = concat_dims(c, c.in.size(), axis);
  c.expect_out_dtype(0, c.in[0].dtype);
  c.expect_out_shape(0, dims);
  std::vector<int64_t> lens;
  std::vector<uint8_t*> parts;
  for (const auto& p : c.in) {
    lens.push_back(p.dims[axis]);
    parts.push_back(p.data);
  }
  concat_copy(*c.pool, dims, axis, lens, dtype_size(c.in[0].dtype), c.out[0].data, parts, true);
}

void concat_grad_entry(Call& c) {
  // inputs x0..x{k-1}, dy; outputs dx0..dx{k-1}
  if (c.in.size() < 2 || c.out.size() + 1 != c.in.size())
    fail(UMLOS_SHAPE_MISMATCH, c.primitive + ": expected k+1 inputs (x0..x{k-1}, dy) and k outputs, got " +
                                   std::to_string(c.in.size()) + " inputs and " + std::to_string(c.out.size()) +
                                   " outputs");
  size_t k = c.out.size();
  int axis = 0;
  std::vector<int64_t> dims = concat_dims(c, k, axis);
  c.expect_in_dtype(k, c.in[0].dtype);
  c.expect_in_shape(k, dims);
  std::vector<int64_t> lens;
  std::vector<uint8_t*> parts;
  for (size_t i = 0; i < k; ++i) {
    c.expect_out_dtype(i, c.in[0].dtype);
    c.expect_out_shape(i, c.in[i].dims);
    lens.push_back(c.in[i].dims[axis]);
    parts.push_back(c.out[i].data);
  }
  concat_copy(*c.pool, dims, axis, lens, dtype_size(c.in[0].dtype), c.in[k].data, parts, false);
}

// ---------------------------------------------------------------- slice

struct SliceSpec {
  int axis;
  int64_t start, length;
  std::vector<int64_t> out_dims;
};

SliceSpec slice_spec(const Call& c, const Operand& x, const Operand* given) {
  if (x.rank() < 1) c.shape_error(c.in_name(0) + ": cannot slice a scalar");
  SliceSpec s;
  s.axis = c.normalize_axis(c.attr_int("axis", 0), x.rank(), "axis");
  s.start = c.attr_int("start", 0);
  int64_t dflt = given && given->rank() == x.rank() ? given->dims[s.axis] : x.dims[s.axis] - s.start;
  s.length = c.attr_int("length", dflt);
  if (s.start < 0 || s.length < 0 || s.start + s.length > x.dims[s.axis])
    c.shape_error("start " + std::to_string(s.start) + " + length " + std::to_string(s.length) + " is outside axis " +
                  std::to_string(s.axis) + " of extent " + std::to_string(x.dims[s.axis]) + " of " + c.in_name(0));
  s.out_dims = x.dims;
  s.out_dims[s.axis] = s.length;
  return s;
}

void slice_copy(ThreadPool& pool, const Operand& x, const SliceSpec& s, uint8_t* small, bool to_small, uint8_t* big) {
  size_t es = dtype_size(x.dtype);
  int64_t outer = dims_product(x.dims, 0, s.axis);
  int64_t inner = dims_product(x.dims, s.axis + 1, x.dims.size());
  int64_t extent = x.dims[s.axis];
  pool.parallel_for(outer, 16, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      uint8_t* sp = small + o * s.length * inner * es;
      uint8_t* bp = big + (o * extent + s.start) * inner * es;
      if (to_small)
        std::memcpy(sp, bp, s.length * inner * es);
      else
        std::memcpy(bp, sp, s.length * inner * es);
    }
  });
}

void slice_entry(Call& c) {
  c.expect_counts(1, 1);
  c.expect_out_dtype(0, c.in[0].dtype);
  SliceSpec s = slice_spec(c, c.in[0], &c.out[0]);
  c.expect_out_shape(0, s.out_dims);
  slice_copy(*c.pool, c.in[0], s, c.out[0].data, true, c.in[0].data);
}

void slice_grad_entry(Call& c) {
  c.expect_counts(2, 1);
  c.expect_in_dtype(1, c.in[0].dtype);
  c.expect_out_dtype(0, c.in[0].dtype);
  SliceSpec s = slice_spec(c, c.in[0], &c.in[1]);
  c.expect_in_shape(1, s.out_dims);
  c.expect_out_shape(0, c.in[0].dims);
  std::memset(c.out[0].data, 0, c.out[0].bytes());
  slice_copy(*c.pool, c.in[0], s, c.in[1].data, false, c.out[0].data);
}

// ---------------------------------------------------------------- gather

std::vector<int64_t> gather_dims(const Call& c) {
  const Operand &table = c.in[0], &idx = c.in[1];
  c.expect_index_dtype(1);
  if (table.rank() < 1) c.shape_error(c.in_name(0) + ": expected rank >= 1, got a scalar");
  expect_indices_below(c, 1, table.dims[0], "index");
  std::vector<int64_t> dims = idx.dims;
  dims.insert(dims.end(), table.dims.begin() + 1, table.dims.end());
  return dims;
}

void gather_entry(Call& c) {
  c.expect_counts(2, 1);
  c.expect_out_dtype(0, c.in[0].dtype);
  c.expect_out_shape(0, gather_dims(c));
  const Operand &table = c.in[0], &idx = c.in[1];
  size_t row_bytes = static_cast<size_t>(dims_product(table.dims, 1, table.dims.size())) * dtype_size(table.dtype);
  uint8_t* out = c.out[0].data;
  c.pool->parallel_for(idx.numel, 64, [&](int64_t s, int64_t e) {
    for (int64_t p = s; p < e; ++p)
      std::memcpy(out + p * row_bytes, table.data + index_at(idx, p) * row_bytes, row_bytes);
  });
}

template <class T>
void gather_grad(Call& c) {
  const Operand &table = c.in[0], &idx = c.in[1];
  c.expect_in_shape(2, gather_dims(c));
  c.expect_out_shape(0, table.dims);
  int64_t rows = table.dims[0];
  int64_t width = dims_product(table.dims, 1, table.dims.size());
  // Positions grouped by table row, ascending within each row (counting sort).
  std::vector<int64_t> start(static_cast<size_t>(rows + 1), 0), order(static_cast<size_t>(idx.numel));
  for (int64_t p = 0; p < idx.numel; ++p) ++start[index_at(idx, p) + 1];
  for (int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t p = 0; p < idx.numel; ++p) order[fill[index_at(idx, p)]++] = p;
  }
  const T* g = c.in[2].as<T>();
  T* dt = c.out[0].as<T>();
  c.pool->parallel_for(rows, 8, [&](int64_t s, int64_t e) {
    std::vector<CanonicalSum> acc(static_cast<size_t>(width));
    for (int64_t r = s; r < e; ++r) {
      std::fill(acc.begin(), acc.end(), CanonicalSum{});
      for (int64_t q = start[r]; q < start[r + 1]; ++q) {
        const T* src = g + order[q] * width;
        for (int64_t k = 0; k < width; ++k) acc[k].add(static_cast<double>(src[k]));
      }
      for (int64_t k = 0; k < width; ++k) dt[r * width + k] = static_cast<T>(acc[k].result());
    }
  });
}

void gather_grad_entry(Call& c) {
  c.expect_counts(3, 1);
  with_float_dtype(c, {2}, {0}, [&](auto t) { gather_grad<decltype(t)>(c); });
}

// ---------------------------------------------------------------- sort

struct SortLines {
  int64_t outer, len, inner;
  bool descending;
};

SortLines sort_lines(const Call& c) {
  const Operand& x = c.in[0];
  if (x.rank() < 1) c.shape_error(c.in_name(0) + ": cannot sort a scalar");
  int axis = c.normalize_axis(c.attr_int("axis", -1), x.rank(), "axis");
  SortLines s;
  s.outer = dims_product(x.dims, 0, axis);
  s.len = x.dims[axis];
  s.inner = dims_product(x.dims, axis + 1, x.dims.size());
  s.descending = c.attr_int("descending", 0) != 0;
  return s;
}

// The stable permutation of one line: NaNs last in both directions, ties
// (-0 and +0 among them) keep their original order. Each element becomes
// one unsigned key that orders as the comparison does, with its position
// below it: keys are then distinct, so an unstable integer sort gives the
// stable permutation, without a comparison function per step.
template <class T>
struct SortKey;
template <>
struct SortKey<float> {
  using Bits = uint32_t;
  using Wide = uint64_t;  // key << 32 | position
};
template <>
struct SortKey<double> {
  using Bits = uint64_t;
  using Wide = unsigned __int128;  // key << 64 | position
};

// The order key of x: ascending keys for ascending values, +0 for -0, and
// the largest key for every NaN; descending order inverts the others.
template <class T>
typename SortKey<T>::Bits order_key(T x, bool descending) {
  using Bits = typename SortKey<T>::Bits;
  constexpr Bits sign = Bits(1) << (8 * sizeof(T) - 1);
  if (std::isnan(x)) return ~Bits(0);
  if (x == T(0)) x = T(0);
  Bits u;
  std::memcpy(&u, &x, sizeof u);
  u = (u & sign) ? ~u : (u | sign);
  // No value but a NaN has the key ~0, so an inverted key never reaches it.
  return descending ? ~u : u;
}

template <class T>
void line_permutation(const T* x, int64_t len, int64_t stride, bool descending, std::vector<int64_t>& perm) {
  if (static_cast<uint64_t>(len) > UINT32_MAX && sizeof(T) == 4) {
    // Positions past 32 bits: the comparison itself (the same order).
    perm.resize(static_cast<size_t>(len));
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) {
      return order_key(x[i * stride], descending) < order_key(x[j * stride], descending);
    });
    return;
  }
  using Wide = typename SortKey<T>::Wide;
  constexpr int shift = 8 * sizeof(typename SortKey<T>::Bits);
  thread_local std::vector<Wide> keys;
  keys.resize(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i)
    keys[i] = (Wide(order_key(x[i * stride], descending)) << shift) | static_cast<Wide>(static_cast<uint64_t>(i));
  std::sort(keys.begin(), keys.end());
  perm.resize(static_cast<size_t>(len));
  const Wide low = (Wide(1) << shift) - 1;
  for (int64_t k = 0; k < len; ++k) perm[k] = static_cast<int64_t>(keys[k] & low);
}

template <class T>
void sort_forward(Call& c) {
  SortLines s = sort_lines(c);
  const Operand& x = c.in[0];
  c.expect_out_shape(0, x.dims);
  bool with_indices = c.out.size() > 1;
  if (with_indices) {
    c.expect_out_dtype(1, UMLOS_DTYPE_I64);
    c.expect_out_shape(1, x.dims);
  }
  const T* px = x.as<T>();
  T* py = c.out[0].as<T>();
  int64_t* pi = with_indices ? c.out[1].as<int64_t>() : nullptr;
  c.pool->parallel_for(s.outer * s.inner, 4, [&](int64_t b, int64_t e) {
    std::vector<int64_t> perm;
    for (int64_t line = b; line < e; ++line) {
      int64_t o = line / s.inner, i = line % s.inner, base = o * s.len * s.inner + i;
      line_permutation(px + base, s.len, s.inner, s.descending, perm);
      for (int64_t k = 0; k < s.len; ++k) {
        py[base + k * s.inner] = px[base + perm[k] * s.inner];
        if (pi) pi[base + k * s.inner] = perm[k];
      }
    }
  });
}

template <class T>
void sort_grad(Call& c) {
  SortLines s = sort_lines(c);
  const Operand& x = c.in[0];
  c.expect_in_shape(1, x.dims);
  c.expect_out_shape(0, x.dims);
  const T* px = x.as<T>();
  const T* pg = c.in[1].as<T>();
  T* pdx = c.out[0].as<T>();
  c.pool->parallel_for(s.outer * s.inner, 4, [&](int64_t b, int64_t e) {
    std::vector<int64_t> perm;
    for (int64_t line = b; line < e; ++line) {
      int64_t o = line / s.inner, i = line % s.inner, base = o * s.len * s.inner + i;
      line_permutation(px + base, s.len, s.inner, s.descending, perm);
      // y[k] = x[perm[k]], so dx[perm[k]] = dy[k]: a scatter, no sums.
      for (int64_t k = 0; k < s.len; ++k) pdx[base + perm[k] * s.inner] = pg[base + k * s.inner];
    }
  });
}

void sort_entry(Call& c) {
  c.expect_counts(1, 1, 1, 2);
  with_float_dtype(c, {}, {0}, [&](auto t) { sort_forward<decltype(t)>(c); });
}

void sort_grad_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { sort_grad<decltype(t)>(c); });
}

}  // namespace

void register_shape_ops(std::vector<PrimitiveInfo>& out) {
  out.push_back({"reshape", "x", "y", reshape_entry});
  out.push_back({"reshape_grad", "x,dy", "dx", reshape_grad_entry});
  out.push_back({"transpose", "x", "y", transpose_entry});
  out.push_back({"transpose_grad", "x,dy", "dx", transpose_grad_entry});
  out.push_back({"concat", "", "y", concat_entry});
  out.push_back({"concat_grad", "", "", concat_grad_entry});
  out.push_back({"slice", "x", "y", slice_entry});
  out.push_back({"slice_grad", "x,dy", "dx", slice_grad_entry});
  out.push_back({"gather", "table,indices", "y", gather_entry});
  out.push_back({"gather_grad", "table,indices,dy", "dtable", gather_grad_entry});
  out.push_back({"sort", "x", "y,indices", sort_entry});
  out.push_back({"sort_grad", "x,dy", "dx", sort_grad_entry});
}

}  // namespace cpu_driver
