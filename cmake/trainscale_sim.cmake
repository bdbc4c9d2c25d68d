# trainscale-sim (docs/model.md "Simulation"): the gradient exchange of dist/ on simulated
# clusters, built with SimGrid's SMPI (Debian libsimgrid-dev; scripts/setup.sh installs it).
# TRAINSCALE_SIM: auto (the default) builds it when SimGrid is found and says so when not;
# ON insists (an error without SimGrid); OFF never builds it. A second-flavor build
# (TRAINSCALE_TESTS_MPI_ONLY) never builds it.
#
# Its ranks are SMPI actors in one process, so dist/ is compiled a second time against SMPI's
# mpi.h (ts_dist_smpi) with the pieces in src/dist/smpi/ in place of those that cannot run there
# (src/dist/smpi/simulation.h lists them). The modules it reuses that never include mpi.h
# (config, nn, backend/ref, data, metrics, core) are linked as the archives the main build makes,
# without their CMake usage requirements: those would bring Open MPI's ts_dist along, whose MPI
# symbols clash with SMPI's. (perfmodel's model builds nets through the backend factory, so the
# cpu backend and oneDNN are linked too; nothing of them runs.)
set(TRAINSCALE_SIM "auto" CACHE STRING "Build trainscale-sim with SimGrid SMPI: auto | ON | OFF")
set_property(CACHE TRAINSCALE_SIM PROPERTY STRINGS auto ON OFF)

set(TS_BUILD_SIM OFF)
if(NOT TRAINSCALE_SIM STREQUAL "OFF" AND NOT TRAINSCALE_TESTS_MPI_ONLY)
  find_library(SIMGRID_LIBRARY simgrid)
  find_path(SIMGRID_INCLUDE_DIR smpi/mpi.h)
  if(SIMGRID_LIBRARY AND SIMGRID_INCLUDE_DIR)
    set(TS_BUILD_SIM ON)
    message(STATUS "trainscale-sim: SimGrid SMPI at ${SIMGRID_LIBRARY}")
  elseif(TRAINSCALE_SIM STREQUAL "ON")
    message(FATAL_ERROR "TRAINSCALE_SIM=ON but SimGrid (libsimgrid, smpi/mpi.h) was not found: install libsimgrid-dev "
                        "(scripts/setup.sh does, as root) or configure with -DTRAINSCALE_SIM=OFF")
  else()
    message(STATUS "trainscale-sim: not built (SimGrid not found; install libsimgrid-dev, e.g. scripts/setup.sh as root)")
  endif()
endif()

if(TS_BUILD_SIM)
  # dist/ against SMPI: every file but those src/dist/smpi/ replaces.
  file(GLOB dist_smpi_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/dist/*.cpp ${CMAKE_SOURCE_DIR}/src/dist/smpi/*.cpp)
  list(FILTER dist_smpi_srcs EXCLUDE REGEX "/src/dist/(comm_thread|shm_allreduce|scratch_memory|reduce_kernel|mpi_sum|request_wait|bounded_finalize)\\.cpp$")
  add_library(ts_dist_smpi STATIC ${dist_smpi_srcs})
  # SMPI's mpi.h first; Open MPI's include directory is never on this target's path.
  target_include_directories(ts_dist_smpi BEFORE PUBLIC ${SIMGRID_INCLUDE_DIR}/smpi)
  target_include_directories(ts_dist_smpi PUBLIC ${CMAKE_SOURCE_DIR}/src ${CMAKE_BINARY_DIR}/generated)
  target_compile_options(ts_dist_smpi PRIVATE ${TS_WARNINGS})
  target_link_libraries(ts_dist_smpi PUBLIC ${SIMGRID_LIBRARY})
  add_dependencies(ts_dist_smpi build_info)

  # The simulator, the two train/ files it shares with trainscale (timing phases, summary) and
  # app/'s mapping of errors to exit codes.
  file(GLOB sim_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/sim/*.cpp)
endif()
if(TS_BUILD_SIM AND sim_srcs)
  add_executable(trainscale-sim ${sim_srcs} ${CMAKE_SOURCE_DIR}/src/train/phases.cpp
                 ${CMAKE_SOURCE_DIR}/src/train/summary.cpp ${CMAKE_SOURCE_DIR}/src/app/command_errors.cpp
                 ${CMAKE_SOURCE_DIR}/src/app/command_options.cpp)
  target_compile_options(trainscale-sim PRIVATE ${TS_WARNINGS} -Wno-dangling-pointer)
  # A CUDA build's backend factory can make a CudaBackend (never in the simulator): its archive
  # and the CUDA libraries resolve the factory's references.
  set(ts_sim_backends ts_backend_cpu)
  set(ts_sim_cuda_libraries)
  if(TRAINSCALE_CUDA)
    list(APPEND ts_sim_backends ts_backend_cuda)
    set(ts_sim_cuda_libraries CUDA::cudart CUDA::cublas CUDA::cublasLt ${CUDNN_LIBRARY} ${NCCL_LIBRARY})
  endif()
  set(ts_sim_archives ts_perfmodel ts_sweep ts_config ts_backend ${ts_sim_backends} ts_nn ts_backend_ref ts_backend_api
      ts_data ts_metrics ts_hdf5 ts_core)
  add_dependencies(trainscale-sim ${ts_sim_archives})
  foreach(lib ${ts_sim_archives})
    list(APPEND ts_sim_archive_files $<TARGET_FILE:${lib}>)
  endforeach()
  # Archive order: each after those that call it; ts_dist_smpi gives config its dist names.
  target_link_libraries(trainscale-sim PRIVATE ${ts_sim_archive_files} ts_dist_smpi $<TARGET_FILE:ts_core>
                        yaml-cpp HDF5::HDF5 ZLIB::ZLIB TurboJPEG::turbojpeg CURL::libcurl DNNL::dnnl OpenMP::OpenMP_CXX Boost::program_options
                        Threads::Threads ${ts_sim_cuda_libraries})
endif()
