// Server 0's agreement on a step to act at (see boundary_arbiter.h).
#include "dist/boundary_arbiter.h"

namespace ts {

void BoundaryArbiter::on_request(const BoundaryRequest& request, int64_t newest) {
  if (agreed_.step != 0 || !request.any()) return;
  agreed_ = {newest + 1, request.signal, request.checkpoint || request.signal != 0};
}

BoundaryAgreement BoundaryArbiter::current(int64_t round) {
  if (agreed_.step != 0 && round > agreed_.step) agreed_ = {};
  return agreed_;
}

}  // namespace ts
