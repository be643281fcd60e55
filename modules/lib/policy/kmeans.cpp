// kmeans.cpp — spherical k-means (kmeans.hpp has the algorithm and its
// conventions). Every reduction is binary64 in ascending index order; no
// threads, so results depend only on the input and the draws.
#include "kmeans.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace umlos {
namespace policy {

namespace {

constexpr double kEpsDenom = 1e-12;  // spec 004 0.C EPS_DENOM

double dot(const double* a, const double* b, size_t p) {
  double s = 0.0;
  for (size_t j = 0; j < p; ++j) s += a[j] * b[j];
  return s;
}

// Normalises v in place; false (v untouched) when its norm is 0.
bool normalise(double* v, size_t p) {
  const double norm = std::sqrt(dot(v, v, p));
  if (!(norm > 0.0)) return false;
  for (size_t j = 0; j < p; ++j) v[j] /= norm;
  return true;
}

// Nearest centroid (largest cosine), ties to the lowest index.
int64_t nearest(const double* x, const std::vector<double>& centroids, size_t k, size_t p) {
  int64_t best = 0;
  double best_d = 0.0;
  for (size_t c = 0; c < k; ++c) {
    const double d = 1.0 - dot(x, &centroids[c * p], p);
    if (c == 0 || d < best_d) {
      best = static_cast<int64_t>(c);
      best_d = d;
    }
  }
  return best;
}

void assign(const std::vector<double>& x, size_t n, size_t p, const std::vector<double>& centroids, size_t k,
            std::vector<int64_t>& out) {
  out.resize(n);
  for (size_t i = 0; i < n; ++i) out[i] = nearest(&x[i * p], centroids, k, p);
}

// Cluster sums (ascending point index) and sizes.
void cluster_sums(const std::vector<double>& x, size_t n, size_t p, const std::vector<int64_t>& a, size_t k,
                  std::vector<double>& sums, std::vector<size_t>& sizes) {
  sums.assign(k * p, 0.0);
  sizes.assign(k, 0);
  for (size_t i = 0; i < n; ++i) {
    const size_t c = static_cast<size_t>(a[i]);
    ++sizes[c];
    for (size_t j = 0; j < p; ++j) sums[c * p + j] += x[i * p + j];
  }
}

double silhouette_from_sums(const std::vector<double>& x, size_t n, size_t p, const std::vector<int64_t>& a, size_t k) {
  std::vector<double> sums;
  std::vector<size_t> sizes;
  cluster_sums(x, n, p, a, k, sums, sizes);
  size_t nonempty = 0;
  for (size_t c = 0; c < k; ++c) nonempty += sizes[c] > 0;
  if (nonempty < 2) return std::numeric_limits<double>::quiet_NaN();
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double* xi = &x[i * p];
    const size_t own = static_cast<size_t>(a[i]);
    double s = 0.0;
    if (sizes[own] > 1) {
      const double self = dot(xi, xi, p);
      const double in = 1.0 - (dot(xi, &sums[own * p], p) - self) / static_cast<double>(sizes[own] - 1);
      double out = std::numeric_limits<double>::infinity();
      for (size_t c = 0; c < k; ++c) {
        if (c == own || sizes[c] == 0) continue;
        out = std::min(out, 1.0 - dot(xi, &sums[c * p], p) / static_cast<double>(sizes[c]));
      }
      s = (out - in) / std::max(std::max(in, out), kEpsDenom);
    }
    total += s;
  }
  return total / static_cast<double>(n);
}

// Step 1: the rows as unit points, zero rows left out (counted in
// r.skipped_zero; r.point_row maps each point back to its row).
std::vector<double> unit_points(const std::vector<double>& rows, size_t p, size_t m, KMeansResult& r) {
  std::vector<double> x;
  x.reserve(rows.size());
  for (size_t i = 0; i < m; ++i) {
    std::vector<double> v(rows.begin() + static_cast<std::ptrdiff_t>(i * p),
                          rows.begin() + static_cast<std::ptrdiff_t>((i + 1) * p));
    for (size_t j = 0; j < p; ++j) {
      if (!std::isfinite(v[j]))
        throw std::invalid_argument("spherical k-means: row " + std::to_string(i) + ", column " + std::to_string(j) +
                                    " is not finite");
    }
    if (!normalise(v.data(), p)) {
      ++r.skipped_zero;
      continue;
    }
    x.insert(x.end(), v.begin(), v.end());
    r.point_row.push_back(i);
  }
  return x;
}

// Step 3: k-means++ seeding on the sphere. The first centroid is the
// normalised mean (the first point if the mean is 0); each further one is
// picked with probability proportional to its cosine distance to the
// nearest centroid so far, from one uniform draw u.
class Seeder {
 public:
  Seeder(const std::vector<double>& x, size_t n, size_t p, KMeansResult& r) : x_(x), n_(n), p_(p), r_(r) {}

  void first() {
    std::vector<double> mean(p_, 0.0);
    for (size_t i = 0; i < n_; ++i)
      for (size_t j = 0; j < p_; ++j) mean[j] += x_[i * p_ + j];
    for (size_t j = 0; j < p_; ++j) mean[j] /= static_cast<double>(n_);
    const double mean_norm = std::sqrt(dot(mean.data(), mean.data(), p_));
    if (mean_norm > kEpsDenom) {
      normalise(mean.data(), p_);
      r_.seeds.push_back(SIZE_MAX);
    } else {
      std::copy(x_.begin(), x_.begin() + static_cast<std::ptrdiff_t>(p_), mean.begin());
      r_.seeds.push_back(0);
    }
    centroids_.insert(centroids_.end(), mean.begin(), mean.end());
    dist_.resize(n_);
    for (size_t i = 0; i < n_; ++i) dist_[i] = std::max(0.0, 1.0 - dot(&x_[i * p_], mean.data(), p_));
  }

  void add(double u) {
    double total = 0.0;
    for (size_t i = 0; i < n_; ++i) total += dist_[i];
    size_t pick = 0;
    if (total > 0.0) {
      const double target = u * total;
      double run = 0.0;
      size_t last_positive = 0;
      bool found = false;
      for (size_t i = 0; i < n_; ++i) {
        if (dist_[i] <= 0.0) continue;
        run += dist_[i];
        last_positive = i;
        if (run > target) {
          pick = i;
          found = true;
          break;
        }
      }
      if (!found) pick = last_positive;  // u * total rounded up to the full sum
    }
    r_.seeds.push_back(pick);
    const double* c = &x_[pick * p_];
    centroids_.insert(centroids_.end(), c, c + p_);
    for (size_t i = 0; i < n_; ++i) dist_[i] = std::min(dist_[i], std::max(0.0, 1.0 - dot(&x_[i * p_], c, p_)));
  }

  size_t count() const { return centroids_.size() / p_; }
  std::vector<double>& centroids() { return centroids_; }

 private:
  const std::vector<double>& x_;
  size_t n_, p_;
  KMeansResult& r_;
  std::vector<double> centroids_;
  std::vector<double> dist_;
};

// Step 4: exactly options.draws draws, whatever k; the last draw asks for
// every value still needed. Without draws (options.draws == 0) further
// centroids come from u = 0.5.
void seed_from_draws(Seeder& seeder, size_t k, const KMeansOptions& options, const UniformDraw& draw) {
  const uint64_t beyond = k > static_cast<size_t>(options.draws) + 1 ? k - options.draws : 1;
  for (uint32_t d = 0; d < options.draws; ++d) {
    const uint64_t count = (d + 1 == options.draws) ? beyond : 1;
    const std::vector<double> u = draw(d, count);
    if (u.size() != count)
      throw std::invalid_argument("spherical k-means: draw " + std::to_string(d) + " returned " +
                                  std::to_string(u.size()) + " values, asked for " + std::to_string(count));
    for (double v : u) {
      if (seeder.count() < k) seeder.add(v);
    }
  }
  while (seeder.count() < k) seeder.add(0.5);
}

// Step 5: Lloyd iterations on the sphere until the assignment repeats or
// options.max_iterations; an empty cluster keeps its previous centroid.
void lloyd(const std::vector<double>& x, size_t n, size_t p, size_t k, const KMeansOptions& options,
           std::vector<double>& centroids, KMeansResult& r) {
  assign(x, n, p, centroids, k, r.assignment);
  std::vector<double> sums;
  std::vector<size_t> sizes;
  std::vector<int64_t> next;
  for (int64_t it = 0; it < options.max_iterations; ++it) {
    cluster_sums(x, n, p, r.assignment, k, sums, sizes);
    for (size_t c = 0; c < k; ++c) {
      if (sizes[c] == 0) continue;  // empty: keep the previous centroid
      std::vector<double> s(sums.begin() + static_cast<std::ptrdiff_t>(c * p),
                            sums.begin() + static_cast<std::ptrdiff_t>((c + 1) * p));
      if (normalise(s.data(), p)) std::copy(s.begin(), s.end(), centroids.begin() + static_cast<std::ptrdiff_t>(c * p));
    }
    ++r.iterations;
    assign(x, n, p, centroids, k, next);
    const bool same = next == r.assignment;
    r.assignment.swap(next);
    if (same) {
      r.converged = true;
      break;
    }
  }
  r.silhouette = silhouette_from_sums(x, n, p, r.assignment, k);
}

}  // namespace

KMeansResult spherical_kmeans(const std::vector<double>& rows, size_t p, const KMeansOptions& options,
                              const UniformDraw& draw) {
  if (p == 0) throw std::invalid_argument("spherical k-means: the dimension p is 0");
  if (rows.size() % p != 0)
    throw std::invalid_argument("spherical k-means: " + std::to_string(rows.size()) +
                                " values are not rows of p = " + std::to_string(p));
  if (options.k < 1) throw std::invalid_argument("spherical k-means: k = " + std::to_string(options.k) + " < 1");
  if (options.max_iterations < 0)
    throw std::invalid_argument("spherical k-means: max_iterations = " + std::to_string(options.max_iterations));
  const size_t m = rows.size() / p;

  KMeansResult r;
  r.p = p;
  const std::vector<double> x = unit_points(rows, p, m, r);
  const size_t n = r.point_row.size();
  r.n = n;
  r.k = std::min(static_cast<size_t>(options.k), n);
  const size_t k = r.k;

  Seeder seeder(x, n, p, r);
  if (k > 0) seeder.first();
  seed_from_draws(seeder, k, options, draw);
  if (k > 0) lloyd(x, n, p, k, options, seeder.centroids(), r);
  r.centroids = std::move(seeder.centroids());
  return r;
}

double silhouette_pairwise(const std::vector<double>& x, size_t p, const std::vector<int64_t>& a, size_t k) {
  const size_t n = a.size();
  std::vector<size_t> sizes(k, 0);
  for (int64_t c : a) ++sizes[static_cast<size_t>(c)];
  size_t nonempty = 0;
  for (size_t s : sizes) nonempty += s > 0;
  if (nonempty < 2) return std::numeric_limits<double>::quiet_NaN();
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const size_t own = static_cast<size_t>(a[i]);
    if (sizes[own] < 2) continue;
    std::vector<double> sum(k, 0.0);
    for (size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      sum[static_cast<size_t>(a[j])] += 1.0 - dot(&x[i * p], &x[j * p], p);
    }
    const double in = sum[own] / static_cast<double>(sizes[own] - 1);
    double out = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < k; ++c)
      if (c != own && sizes[c] > 0) out = std::min(out, sum[c] / static_cast<double>(sizes[c]));
    total += (out - in) / std::max(std::max(in, out), kEpsDenom);
  }
  return total / static_cast<double>(n);
}

std::vector<double> latent_rows(const std::vector<double>& z, const std::vector<int64_t>& index, int64_t count,
                                size_t p, size_t last_n, std::vector<int64_t>* global_index) {
  const size_t cap = index.size();
  if (p == 0 || z.size() != cap * p)
    throw std::invalid_argument("latent buffer: latent.z has " + std::to_string(z.size()) + " values, expected " +
                                std::to_string(cap) + " rows of " + std::to_string(p));
  if (count < 0) throw std::invalid_argument("latent buffer: latent.count = " + std::to_string(count) + " < 0");
  const uint64_t total = static_cast<uint64_t>(count);
  uint64_t live = std::min<uint64_t>(total, cap);
  if (last_n > 0) live = std::min<uint64_t>(live, last_n);
  // Rows in insertion order (oldest first), then a stable sort by index.
  std::vector<size_t> order;
  order.reserve(live);
  for (uint64_t j = total - live; j < total; ++j) {
    const size_t row = static_cast<size_t>(j % cap);
    if (index[row] >= 0) order.push_back(row);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return index[a] < index[b]; });
  std::vector<double> out;
  out.reserve(order.size() * p);
  if (global_index) global_index->clear();
  for (size_t row : order) {
    out.insert(out.end(), z.begin() + static_cast<std::ptrdiff_t>(row * p),
               z.begin() + static_cast<std::ptrdiff_t>((row + 1) * p));
    if (global_index) global_index->push_back(index[row]);
  }
  return out;
}

}  // namespace policy
}  // namespace umlos
