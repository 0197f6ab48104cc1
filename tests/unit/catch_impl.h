// Runs the test binary's Catch2 test cases (unit/catch_impl.cc holds Catch2's implementation).
#pragma once

int runCatch(int argc, char** argv);
