// The native side of Launch.popen (berth.py): a command started through berth's own
// spawner and supervised as every child berth starts is (src/launch/supervised.h).
#pragma once

#include <pybind11/pybind11.h>

namespace berth::python {

// Adds `_spawn` and its `_Child` to the module.
void bind_launched(pybind11::module_& m);

}  // namespace berth::python
