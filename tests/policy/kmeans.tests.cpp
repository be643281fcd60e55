// Spherical k-means (modules/core/policy/kmeans.hpp): a data set with a
// closed-form silhouette, clustered points on the sphere, exactly 31 draws,
// determinism, empty clusters, zero rows, the latent ring order.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "kmeans.hpp"

using namespace umlos::policy;

namespace {

// A draw source that records every call and returns fixed or seeded values.
struct Draws {
  std::vector<std::pair<uint32_t, uint64_t>> calls;
  std::mt19937_64 gen;
  double fixed = -1.0;  // >= 0: every value is this
  explicit Draws(uint64_t seed = 1, double fixed_value = -1.0) : gen(seed), fixed(fixed_value) {}
  UniformDraw fn() {
    return [this](uint32_t d, uint64_t n) {
      calls.emplace_back(d, n);
      std::vector<double> u(n);
      for (double& v : u) v = fixed >= 0 ? fixed : (static_cast<double>(gen() >> 11) + 0.5) / 9007199254740992.0;
      return u;
    };
  }
};

// The six points of the policy module's conformance vector, in order.
const std::vector<double> kCircle = {1.0, 0.0, 0.96, 0.28, 0.96, -0.28, 0.0, 1.0, 0.28, 0.96, -0.28, 0.96};

// c clusters of m points each in R^p: around the basis direction e_(i mod p)
// scaled by a random length, with Gaussian jitter sigma. Rows interleave
// the clusters; label[i] is the true cluster.
std::vector<double> blobs(size_t c, size_t m, size_t p, double sigma, uint64_t seed, std::vector<int>& label) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  std::uniform_real_distribution<double> scale(0.5, 3.0);
  std::vector<double> rows;
  label.clear();
  for (size_t i = 0; i < c * m; ++i) {
    const size_t k = i % c;
    const double s = scale(gen);
    for (size_t j = 0; j < p; ++j) rows.push_back(s * ((j == k ? 1.0 : 0.0) + noise(gen)));
    label.push_back(static_cast<int>(k));
  }
  return rows;
}

}  // namespace

TEST_CASE("Two clusters on the circle give the silhouette known in closed form and the axis centroids",
          "[policy][kmeans]") {
  Draws draws(3);
  KMeansOptions opt;
  opt.k = 2;
  const KMeansResult r = spherical_kmeans(kCircle, 2, opt, draws.fn());
  REQUIRE(r.k == 2);
  REQUIRE(r.n == 6);
  // Per cluster the three points score 0.96, 1 - 0.0984/(2.1824/3), 1 - 0.0984/(3.8176/3).
  const double expected = (0.96 + (1.0 - 0.2952 / 2.1824) + (1.0 - 0.2952 / 3.8176)) / 3.0;
  CHECK(r.silhouette == Approx(expected).margin(1e-12));
  CHECK(r.silhouette == Approx(silhouette_pairwise(kCircle, 2, r.assignment, 2)).margin(1e-12));
  // Clusters are {0,1,2} and {3,4,5}; centroids are the axes (sums are symmetric).
  CHECK(r.assignment[0] == r.assignment[1]);
  CHECK(r.assignment[1] == r.assignment[2]);
  CHECK(r.assignment[3] == r.assignment[4]);
  CHECK(r.assignment[4] == r.assignment[5]);
  CHECK(r.assignment[0] != r.assignment[3]);
  const size_t a = static_cast<size_t>(r.assignment[0]), b = static_cast<size_t>(r.assignment[3]);
  CHECK(r.centroids[a * 2] == Approx(1.0).margin(1e-15));
  CHECK(r.centroids[a * 2 + 1] == Approx(0.0).margin(1e-15));
  CHECK(r.centroids[b * 2] == Approx(0.0).margin(1e-15));
  CHECK(r.centroids[b * 2 + 1] == Approx(1.0).margin(1e-15));
  CHECK(r.converged);
  // The first centroid is seeded at the normalised mean (45 degrees).
  CHECK(r.seeds[0] == SIZE_MAX);
}

TEST_CASE("Clustered synthetic points on the sphere are recovered exactly, with a high silhouette",
          "[policy][kmeans]") {
  std::vector<int> label;
  const size_t c = 5, m = 40, p = 8;
  const std::vector<double> rows = blobs(c, m, p, 0.05, 42, label);
  Draws draws(7);
  KMeansOptions opt;
  opt.k = 5;
  const KMeansResult r = spherical_kmeans(rows, p, opt, draws.fn());
  REQUIRE(r.k == 5);
  REQUIRE(r.n == c * m);
  // Every true cluster maps to one found cluster, and distinct ones to distinct ones.
  std::vector<int64_t> found(c, -1);
  for (size_t i = 0; i < r.n; ++i) {
    const size_t t = static_cast<size_t>(label[i]);
    if (found[t] < 0) found[t] = r.assignment[i];
    CHECK(found[t] == r.assignment[i]);
  }
  for (size_t x = 0; x < c; ++x)
    for (size_t y = x + 1; y < c; ++y) CHECK(found[x] != found[y]);
  // Centroids are unit vectors near the basis directions.
  for (size_t t = 0; t < c; ++t) {
    const double* cen = &r.centroids[static_cast<size_t>(found[t]) * p];
    double norm = 0.0;
    for (size_t j = 0; j < p; ++j) norm += cen[j] * cen[j];
    CHECK(norm == Approx(1.0).margin(1e-14));
    CHECK(cen[t] > 0.99);
  }
  // Cosine distance within a blob ~ sigma^2 p, across blobs ~ 1: silhouette near 1.
  CHECK(r.silhouette > 0.9);
  CHECK(r.silhouette < 1.0);
  // The O(n k p) silhouette is the pairwise definition up to rounding.
  std::vector<double> unit = rows;
  for (size_t i = 0; i < r.n; ++i) {
    double s = 0.0;
    for (size_t j = 0; j < p; ++j) s += unit[i * p + j] * unit[i * p + j];
    for (size_t j = 0; j < p; ++j) unit[i * p + j] /= std::sqrt(s);
  }
  CHECK(r.silhouette == Approx(silhouette_pairwise(unit, p, r.assignment, r.k)).margin(1e-12));
}

TEST_CASE("The draw callback is called exactly 31 times whatever k and the number of points", "[policy][kmeans]") {
  std::vector<int> label;
  const std::vector<double> rows = blobs(4, 25, 6, 0.1, 5, label);  // 100 points
  struct Case {
    int64_t k;
    size_t points;
    uint64_t last_count;
    size_t k_eff;
  };
  for (const Case& cs : {Case{1, 100, 1, 1}, Case{5, 100, 1, 5}, Case{32, 100, 1, 32}, Case{33, 100, 2, 33},
                         Case{40, 100, 9, 40}, Case{64, 100, 33, 64}, Case{8, 3, 1, 3}, Case{32, 0, 1, 0}}) {
    INFO("k = " << cs.k << ", points = " << cs.points);
    Draws draws(11);
    KMeansOptions opt;
    opt.k = cs.k;
    const std::vector<double> sub(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(cs.points * 6));
    const KMeansResult r = spherical_kmeans(sub, 6, opt, draws.fn());
    CHECK(r.k == cs.k_eff);
    CHECK(r.centroids.size() == cs.k_eff * 6);
    REQUIRE(draws.calls.size() == 31);
    for (uint32_t d = 0; d < 31; ++d) {
      CHECK(draws.calls[d].first == d);
      CHECK(draws.calls[d].second == (d == 30 ? cs.last_count : 1u));
    }
    CHECK(r.seeds.size() == cs.k_eff);
    if (cs.points == 0) CHECK(std::isnan(r.silhouette));
  }
}

TEST_CASE("Spherical k-means is deterministic: the same rows and draws give the same bytes", "[policy][kmeans]") {
  std::vector<int> label;
  const std::vector<double> rows = blobs(6, 50, 16, 0.3, 9, label);
  KMeansOptions opt;
  opt.k = 12;
  Draws d1(99), d2(99), d3(100);
  const KMeansResult a = spherical_kmeans(rows, 16, opt, d1.fn());
  const KMeansResult b = spherical_kmeans(rows, 16, opt, d2.fn());
  const KMeansResult c = spherical_kmeans(rows, 16, opt, d3.fn());
  REQUIRE(a.centroids.size() == b.centroids.size());
  CHECK(std::memcmp(a.centroids.data(), b.centroids.data(), a.centroids.size() * 8) == 0);
  CHECK(a.assignment == b.assignment);
  CHECK(std::memcmp(&a.silhouette, &b.silhouette, 8) == 0);
  CHECK(a.seeds == b.seeds);
  CHECK(a.iterations == b.iterations);
  CHECK(a.seeds != c.seeds);  // other draws, other seeding
  CHECK(a.iterations <= 50);
}

TEST_CASE("An empty cluster keeps its previous centroid, all-coincident points seed the lowest index",
          "[policy][kmeans]") {
  // Three copies of (1,0), then three of (0,1); k = 4; every uniform 0.1.
  const std::vector<double> rows = {1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1};
  Draws draws(0, 0.1);
  KMeansOptions opt;
  opt.k = 4;
  const KMeansResult r = spherical_kmeans(rows, 2, opt, draws.fn());
  REQUIRE(r.k == 4);
  // Seeds: the mean; u = 0.1 of six equal weights -> point 0; then the
  // (0,1) copies carry all the weight -> point 3; then every distance is 0 -> point 0.
  CHECK(r.seeds == std::vector<size_t>{SIZE_MAX, 0, 3, 0});
  // (1,0) ties between centroids 1 and 3: the lowest index takes them.
  CHECK(r.assignment == std::vector<int64_t>{1, 1, 1, 2, 2, 2});
  // Centroids 0 (the normalised mean) and 3 (a copy of point 0) stay empty
  // and keep their previous value.
  CHECK(r.centroids[0] == Approx(std::sqrt(0.5)).margin(1e-15));
  CHECK(r.centroids[1] == Approx(std::sqrt(0.5)).margin(1e-15));
  CHECK(r.centroids[6] == 1.0);
  CHECK(r.centroids[7] == 0.0);
  CHECK(r.centroids[2] == 1.0);
  CHECK(r.centroids[5] == 1.0);
  // Silhouette over the two non-empty clusters: a = 0, b = 1 for every point.
  CHECK(r.silhouette == 1.0);
  CHECK(r.converged);
  CHECK(draws.calls.size() == 31);
}

TEST_CASE("k is clamped to the number of points, zero rows are left out, non-finite rows are refused",
          "[policy][kmeans]") {
  const std::vector<double> rows = {0, 0, 2, 0, 0, 0, 0, 3, 1, 1};
  Draws draws(1);
  KMeansOptions opt;
  opt.k = 32;
  const KMeansResult r = spherical_kmeans(rows, 2, opt, draws.fn());
  CHECK(r.n == 3);
  CHECK(r.skipped_zero == 2);
  CHECK(r.k == 3);
  CHECK(r.point_row == std::vector<size_t>{1, 3, 4});
  CHECK(draws.calls.size() == 31);
  // Every point its own cluster: each scores 0, silhouette 0.
  CHECK(r.silhouette == 0.0);

  const KMeansResult one = spherical_kmeans({3, 4}, 2, opt, Draws(1).fn());
  CHECK(one.k == 1);
  CHECK(std::isnan(one.silhouette));  // one cluster: undefined
  REQUIRE(one.centroids.size() == 2);
  CHECK(one.centroids[0] == Approx(0.6).margin(1e-15));
  CHECK(one.centroids[1] == Approx(0.8).margin(1e-15));

  CHECK_THROWS_WITH(spherical_kmeans({1, std::nan("")}, 2, opt, Draws(1).fn()),
                    Catch::Contains("row 0, column 1 is not finite"));
  CHECK_THROWS_WITH(spherical_kmeans({1, 2, 3}, 2, opt, Draws(1).fn()), Catch::Contains("not rows of p = 2"));
  opt.k = 0;
  CHECK_THROWS_WITH(spherical_kmeans({1, 2}, 2, opt, Draws(1).fn()), Catch::Contains("k = 0 < 1"));
}

TEST_CASE("Latent ring rows come in ascending global index, oldest first among equal indices, last_n most recent",
          "[policy][kmeans]") {
  // cap 4, p 1, 6 insertions: rows hold insertions 4, 5, 2, 3.
  const std::vector<double> z = {40, 50, 20, 30};
  const std::vector<int64_t> index = {7, 1, 9, 1};
  std::vector<int64_t> gi;
  CHECK(latent_rows(z, index, 6, 1, 0, &gi) == std::vector<double>{30, 50, 40, 20});
  CHECK(gi == std::vector<int64_t>{1, 1, 7, 9});  // insertion 3 (row 3) before insertion 5 (row 1)
  CHECK(latent_rows(z, index, 6, 1, 2, &gi) == std::vector<double>{50, 40});  // insertions 4, 5
  CHECK(gi == std::vector<int64_t>{1, 7});
  // Not yet full: count 2 -> rows 0, 1; empty rows (-1) are skipped.
  CHECK(latent_rows(z, {7, -1, 9, 1}, 2, 1) == std::vector<double>{40});
  CHECK(latent_rows(z, index, 0, 1).empty());
  CHECK_THROWS(latent_rows(z, index, -1, 1));
  CHECK_THROWS(latent_rows({1, 2, 3}, index, 3, 1));
}
