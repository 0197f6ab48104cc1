// The parts of the ftcomm._core module, one function per C++ class bound.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "ftcomm/communicator.h"

namespace ftcomm::python {

void bindWork(pybind11::module_& m);
void bindCommunicator(pybind11::module_& m);
// The collectives and send/recv of ftcomm.Communicator (bindCommunicator calls it).
void bindCollectives(pybind11::class_<Communicator, std::shared_ptr<Communicator>>& c);
void bindStore(pybind11::module_& m);
void bindWindow(pybind11::module_& m);

}  // namespace ftcomm::python
