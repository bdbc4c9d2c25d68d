// Initialises MPI once for a whole GoogleTest binary (the test_mpi_* tests run under mpiexec):
// include it from exactly one source file of the test executable.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "dist/communicator.h"

namespace ts::testing_support {

class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { session_ = std::make_unique<MpiSession>(nullptr, nullptr); }
  void TearDown() override { session_.reset(); }

 private:
  std::unique_ptr<MpiSession> session_;
};

inline const auto* const kMpiEnvironment = ::testing::AddGlobalTestEnvironment(new MpiEnvironment);

}  // namespace ts::testing_support
