// Alpha-beta-gamma costs of collectives (docs/model.md "Communication model"). A cost is the
// count of three terms, T = latency x alpha + bytes x beta + reduced x gamma, so one formula
// serves any link (and a calibrated alpha and beta).
//
// MST (minimum spanning tree: reduce + broadcast) and BKT (bucket: reduce-scatter +
// all-gather) on a star and on a d-dimensional mesh p = d_1 x ... x d_D are Chan, Heimlich,
// Purkayastha and van de Geijn, "Collective communication: theory, practice, and experience"
// (CCPE 19(13), 2007), as tabulated by the material (Castello, Dolz, Quintana-Orti, Duato,
// "Theoretical scalability analysis of distributed deep convolutional neural networks",
// CCGrid 2019). A star is the one-dimensional case dims = {p}: every step of the bucket
// algorithm is a neighbour exchange on a ring through the switch. ring, tree, butterfly,
// rabenseifner, ps and shm are the algorithms of docs/allreduce.md and MPI libraries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts::perf {

struct CostTerms {
  double latency = 0;  // messages on the critical path (times alpha)
  double bytes = 0;    // bytes on the critical path (times beta)
  double reduced = 0;  // bytes summed on the critical path (times gamma)

  double seconds(double alpha_s, double beta_s_per_byte, double gamma_s_per_byte) const {
    return latency * alpha_s + bytes * beta_s_per_byte + reduced * gamma_s_per_byte;
  }
  CostTerms operator+(const CostTerms& o) const { return {latency + o.latency, bytes + o.bytes, reduced + o.reduced}; }
};

// The collectives of the material's table for `m` bytes on a grid `dims` (product = ranks; a
// star is {p}). Each dimension k contributes ceil(log2 d_k) (MST) or d_k - 1 (BKT) steps.
CostTerms mst_broadcast(const std::vector<int64_t>& dims, double m);   // sum ceil(log2 d_k) (a + m b)
CostTerms mst_reduce(const std::vector<int64_t>& dims, double m);      // sum ceil(log2 d_k) (a + m b + m g)
CostTerms bkt_allgather(const std::vector<int64_t>& dims, double m);   // sum (d_k - 1) a + (p-1)/p m b
CostTerms bkt_reduce_scatter(const std::vector<int64_t>& dims, double m);  // sum (d_k - 1) a + (p-1)/p m (b + g)
CostTerms mst_allreduce(const std::vector<int64_t>& dims, double m);   // reduce + broadcast
CostTerms bkt_allreduce(const std::vector<int64_t>& dims, double m);   // reduce-scatter + all-gather

// docs/allreduce.md's algorithms on p ranks (topology-blind: a 1-D ring, a binomial tree).
// dist/allreduce.cpp's ring sends each chunk in slices of this many bytes (kRingSliceFloats).
constexpr double kRingSliceBytes = 1 << 20;
CostTerms ring_allreduce(int64_t p, double m);  // 2(p-1) a + 2(p-1)/p m b + (p-1)/p m g, or one slice's g once m/p > slice
CostTerms tree_allreduce(int64_t p, double m);          // 2 ceil(log2 p) (a + m b) + ceil(log2 p) m g
// recursive doubling: log2 p (a + m b + m g) for p a power of two; otherwise, with p2 the largest
// power of two below p, (log2 p2 + 2)(a + m b) + (log2 p2 + 1) m g (fold in, butterfly, fold out)
CostTerms butterfly_allreduce(int64_t p, double m);
CostTerms rabenseifner_allreduce(int64_t p, double m);  // 2 ceil(log2 p) a + 2(p-1)/p m b + (p-1)/p m g
CostTerms ps_allreduce(int64_t p, double m);            // 2(p-1)(a + m b) + (p-1) m g
// shm in place on one node: (K + 2) a + 2(p-1)/p m b + (p-1)/p m g with K = ceil(m / step),
// step = 256 KiB; two ranks (pair mode): (K + 1) a + m b + m g. alpha is a counter handoff,
// beta a byte copied through shared memory.
CostTerms shm_allreduce(int64_t p, double m);

// The grid p ranks occupy on a mesh/torus of `dims`: as nearly square as the machine's grid
// allows (the smallest dimension with room grows first), each d_k <= dims[k], product >= p
// (6 ranks on [32, 32]: [3, 2]; 7: [3, 3], a grid with two idle places).
std::vector<int64_t> subgrid_dims(int64_t p, const std::vector<int64_t>& dims);

}  // namespace ts::perf
