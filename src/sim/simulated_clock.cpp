// now_seconds() in trainscale-sim (core/timer.h): the simulated time, so that the timings dist/
// takes inside a simulation (communication, waiting, the update) are simulated seconds. Linked
// in place of core/clock.cpp, which defines nothing else.
#include <simgrid/s4u/Engine.hpp>

#include "core/timer.h"

namespace ts {

double now_seconds() { return simgrid::s4u::Engine::get_clock(); }

}  // namespace ts
