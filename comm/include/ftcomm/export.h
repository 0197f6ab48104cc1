// FTCOMM_API marks what libftcomm.so exports: the public ftcomm:: API. The library is built with
// hidden visibility, so everything else (the engine, the transports, gRPC's and protobuf's
// generated code) stays inside it.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define FTCOMM_API __attribute__((visibility("default")))
#else
#define FTCOMM_API
#endif
