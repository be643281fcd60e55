// kmeans.hpp — spherical k-means of spec 004 (IV Cluster.SphericalKMeans_v1,
// and the clustering step of Module.ActivateNonParamModule_v1), in plain
// C++17 on std::vector<double>, with the randomness injected as a callback
// so that any caller takes its draws from its own stream.
//
// Algorithm (docs/policy.md has the decisions and their reasons):
//  1. Points are the rows given, in the order given (callers pass them in
//     ascending global sample index). Each row is divided by its L2 norm
//     (sum of squares in ascending index order, binary64). A row of norm 0
//     has no direction: it is left out (counted in Result::skipped_zero).
//     A non-finite element is an error (std::invalid_argument).
//  2. k = min(options.k, number of points).
//  3. Seeding, k-means++ on the sphere: the first centroid is the
//     normalised mean of the points (the first point when that mean is 0).
//     Every point keeps D(i) = min over chosen centroids of 1 - cos, clamped
//     to >= 0 (for unit vectors |x - c|^2 = 2 (1 - cos), so weighting by D is
//     exactly k-means++'s squared-distance weighting). Each further centroid
//     is one categorical draw: with u the draw's uniform in (0, 1) and W the
//     sum of D in ascending index order, the point chosen is the smallest i
//     whose running sum (ascending) exceeds u * W; when W == 0 (every point
//     coincides with a centroid) it is the lowest index.
//  4. The callback is called exactly options.draws (31) times, in order
//     d = 0..30, whatever k and the number of points: draw d yields the
//     uniform of centroid d + 1. When k - 1 < 31 the remaining draws are
//     still taken and their values discarded (the stream advances by the
//     declared count); when k - 1 > 31 the last draw (d = 30) asks for
//     k - 31 values, used in order for centroids 31 .. k - 1 (still one
//     draw: a draw is one request of any size).
//  5. Lloyd: assign every point to the centroid of largest cosine (smallest
//     1 - cos), ties to the lowest centroid index; each centroid becomes the
//     normalised sum of its members (ascending point index); an empty
//     cluster, or one whose sum is the zero vector, keeps its previous
//     centroid. At most options.max_iterations (50) updates; it stops early
//     when an update leaves the assignment unchanged. The assignment
//     returned always belongs to the centroids returned.
//  6. Silhouette with cosine distance d = 1 - cos over the final
//     assignment, mean over points in ascending order. For point i in
//     cluster A: a = mean distance to the other members of A, b = the
//     smallest mean distance to the members of another non-empty cluster,
//     s = (b - a) / max(a, b, EPS_DENOM), and s = 0 when |A| = 1. Computed
//     through the cluster sums (mean_j (1 - x.x_j) = 1 - x.S/|C|), which is
//     the pairwise definition up to rounding, in O(n k p) instead of
//     O(n^2 p). Undefined (NaN) with fewer than 2 non-empty clusters.
#ifndef UMLOS_POLICY_KMEANS_HPP_
#define UMLOS_POLICY_KMEANS_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace umlos {
namespace policy {

// Returns `count` uniforms in (0, 1) for draw number `draw` (0-based).
// Called exactly Options::draws times per spherical_kmeans call.
using UniformDraw = std::function<std::vector<double>(uint32_t draw, uint64_t count)>;

struct KMeansOptions {
  int64_t k = 32;               // num_prototypes; must be >= 1
  int64_t max_iterations = 50;  // Lloyd updates
  uint32_t draws = 31;          // exactly this many calls of the callback
};

struct KMeansResult {
  size_t n = 0;                     // points clustered (zero rows left out)
  size_t p = 0;                     // dimension
  size_t k = 0;                     // centroids: min(options.k, n)
  std::vector<double> centroids;    // k * p, row-major, unit rows
  std::vector<int64_t> assignment;  // n, centroid of each point
  std::vector<size_t> point_row;    // n, the input row of each point
  std::vector<size_t> seeds;        // k, the point chosen as each initial centroid (SIZE_MAX: the mean)
  double silhouette = std::numeric_limits<double>::quiet_NaN();
  int64_t iterations = 0;   // Lloyd updates performed
  bool converged = false;   // stopped because the assignment was stable
  size_t skipped_zero = 0;  // rows of norm 0
};

// rows: m * p values, row-major. Throws std::invalid_argument for p == 0,
// a size that is not a multiple of p, k < 1, or a non-finite element.
KMeansResult spherical_kmeans(const std::vector<double>& rows, size_t p, const KMeansOptions& options,
                              const UniformDraw& draw);

// The pairwise-definition silhouette (O(n^2 p)), for tests: unit rows,
// cosine distance, the same conventions as KMeansResult::silhouette.
double silhouette_pairwise(const std::vector<double>& unit_rows, size_t p, const std::vector<int64_t>& assignment,
                           size_t k);

// The valid rows of a latent ring buffer (docs/training.md: latent.z f64
// [cap, p], latent.index i64 [cap], latent.count i64 []), in ascending
// global sample index; the same index inserted twice keeps insertion order
// (oldest first). Row r is valid when r < min(count, cap) and index[r] >= 0.
// last_n > 0 keeps only the last_n most recent insertions (before sorting);
// 0 keeps them all. Returns the rows (n * p) and, when given, their global
// indices.
std::vector<double> latent_rows(const std::vector<double>& z, const std::vector<int64_t>& index, int64_t count,
                                size_t p, size_t last_n = 0, std::vector<int64_t>* global_index = nullptr);

}  // namespace policy
}  // namespace umlos

#endif  // UMLOS_POLICY_KMEANS_HPP_
