// workloads.hpp — deterministic planning workloads for bench/tmmu:
// network graphs derived from published layer shapes (ResNet-50, GPT-2
// small, BERT-base) and a generator of large mixed workloads. Each is turned
// into liveness intervals by one model of execution (workloads.cpp):
//   forward op k runs at step k; in training, its backward runs at step
//   2K-1-k and the optimizer at step 2K;
//   inference: an activation lives from its op to its last consumer;
//   training:  an op's inputs are saved for its backward (saved_for_backward
//              extension), the gradient of an activation lives from the
//              backward of its last consumer to the backward of its producer,
//              weight gradients from their backward step to the optimizer.
#pragma once

#include <cstdint>
#include <string>

#include "plan/intervals.hpp"

namespace umlos::bench {

// batch: images per step; train: forward + backward.
plan::IntervalSet resnet50(uint64_t batch, bool train);
// GPT-2 small: 12 layers, d 768, 12 heads, vocabulary 50257.
plan::IntervalSet gpt2_small(uint64_t batch, uint64_t seq, bool train);
// BERT-base: 12 layers, d 768, 12 heads, FFN 3072, vocabulary 30522.
plan::IntervalSet bert_base(uint64_t batch, uint64_t seq, bool train);
// CNN stages feeding transformer blocks, trained over micro-batches of
// varying size (1F1B-style overlap of consecutive micro-batches), until
// about `n_tensors` activation/gradient tensors exist. Seeded, deterministic.
// period != 0: micro-batch m repeats the shapes of micro-batch m mod period
// (a fixed set of bucketed shapes per training step); the next micro-batch
// starts K/overlap + U[0, K/overlap] steps after the previous one (K = its
// ops), so a larger overlap keeps more micro-batches in flight.
plan::IntervalSet mixed_workload(uint64_t n_tensors, uint64_t seed, uint64_t period = 0, int64_t overlap = 3);

}  // namespace umlos::bench
