// The parts of the ftcomm._core module, one function per C++ class bound.
#pragma once

#include <pybind11/pybind11.h>

namespace ftcomm::python {

void bindWork(pybind11::module_& m);
void bindCommunicator(pybind11::module_& m);
void bindStore(pybind11::module_& m);
void bindWindow(pybind11::module_& m);

}  // namespace ftcomm::python
