#!/usr/bin/env bash
# ftcomm as a user installs it: `cmake --install` into a temporary prefix holds libftcomm.so.0
# (its SONAME; exporting only ftcomm:: symbols), the public headers and no internal ones, the
# CMake package, ftcomm.pc and the programs; examples/consumer builds against it with
# find_package and with pkg-config and runs on 2 ranks under the installed ftcomm-run; the
# Debian packages (cpack) name Debian packages as dependencies, keep ftcomm-bench and the NCCL
# plugin out of the main one, and the consumer runs against them unpacked (dpkg-deb -x); and the
# library alone configures without MPI, Catch2 and Gloo.
#   tests/install/install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "${1:?usage: install_test.sh BUILD_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: install_test.sh BUILD_DIR SOURCE_DIR}" && pwd)
work=$(mktemp -d /tmp/ftcomm-install-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
# The library folder the build was configured with (scripts/build: prefix /usr, so multiarch).
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
[ "$libdir" = "lib/$arch" ] || fail "CMAKE_INSTALL_LIBDIR is '$libdir', not Debian's lib/$arch"

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
lib=$prefix/$libdir
[ -f "$lib/libftcomm.so.0" ] || fail "no $lib/libftcomm.so.0"
[ -L "$lib/libftcomm.so" ] || fail "no libftcomm.so link for the linker"
readelf -d "$lib/libftcomm.so.0" | grep -q 'SONAME.*\[libftcomm.so.0\]' || fail "SONAME is not libftcomm.so.0"
for h in communicator.h work.h window.h memory.h status.h types.h export.h version.h nccl_communicator.h; do
  [ -f "$prefix/include/ftcomm/$h" ] || fail "no include/ftcomm/$h"
done
leaked=$(find "$prefix/include" -name '*.h' | grep -v "^$prefix/include/ftcomm/" || true)
[ -z "$leaked" ] || fail "internal headers installed: $leaked"
for p in ftcomm-rendezvous ftcomm-run ftcomm-fr ftcomm-tune; do
  [ -x "$prefix/bin/$p" ] || fail "no bin/$p"
done
[ -f "$lib/cmake/ftcomm/ftcommConfig.cmake" ] || fail "no ftcommConfig.cmake"
[ -f "$lib/cmake/ftcomm/ftcommConfigVersion.cmake" ] || fail "no ftcommConfigVersion.cmake"
[ -f "$lib/pkgconfig/ftcomm.pc" ] || fail "no ftcomm.pc"

# Only the public API is exported, and all of it that a program calls.
nm -D --defined-only -C "$lib/libftcomm.so.0" | awk '{ $1=""; $2=""; sub(/^  /, ""); print }' \
  >"$work/exported"
others=$(grep -v '^ftcomm::' "$work/exported" || true)
[ -z "$others" ] || { echo "$others" | head -20; fail "libftcomm.so exports symbols outside ftcomm::"; }
internal=$(grep -E '^ftcomm::(detail|transport|algorithms|tuning|recorder|rendezvous|nccl|shm)::' "$work/exported" || true)
[ -z "$internal" ] || { echo "$internal" | head; fail "libftcomm.so exports internal symbols"; }
for s in 'ftcomm::Communicator::create(' 'ftcomm::Communicator::allReduce(' 'ftcomm::Work::wait()' \
         'ftcomm::allocMem(' 'ftcomm::version()' 'ftcomm::Window::' 'ftcomm::NcclCommunicator::create('; do
  grep -qF "$s" "$work/exported" || fail "libftcomm.so does not export $s"
done

run2() {  # runs a consumer on 2 ranks under an installed ftcomm-run; both ranks must say OK
  local bin=$1 exe=$2 log=$3
  shift 3
  env "$@" "$bin/ftcomm-run" -np 2 -- "$exe" >"$log" 2>&1 || { cat "$log"; return 1; }
  [ "$(grep -c '^consumer: rank [01] of 2: allreduce and broadcast OK (ftcomm ' "$log")" -eq 2 ] \
    || { cat "$log"; return 1; }
}

# The consumer through find_package(ftcomm), nothing else on its paths.
cmake -S "$src/examples/consumer" -B "$work/consumer-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/consumer-cmake.log" 2>&1 || { cat "$work/consumer-cmake.log"; fail "find_package(ftcomm) configure"; }
cmake --build "$work/consumer-cmake" >>"$work/consumer-cmake.log" 2>&1 \
  || { cat "$work/consumer-cmake.log"; fail "the find_package consumer did not build"; }
run2 "$prefix/bin" "$work/consumer-cmake/consumer" "$work/run-cmake.log" || fail "the find_package consumer failed"

# The same program through pkg-config.
cflags_libs=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --cflags --libs ftcomm)
echo "$cflags_libs" | grep -q -- '-std=c++20' || fail "ftcomm.pc's Cflags lack -std=c++20"
# shellcheck disable=SC2086
c++ "$src/examples/consumer/consumer.cc" $cflags_libs -o "$work/consumer-pc" \
  || fail "the consumer did not build with pkg-config"
run2 "$prefix/bin" "$work/consumer-pc" "$work/run-pc.log" LD_LIBRARY_PATH="$lib" \
  || fail "the pkg-config consumer failed"

# The NCCL backend is a plugin of libftcomm.so, loaded when a program creates an NcclCommunicator:
# where the build found NCCL it loads (and, without a GPU, says so); where the plugin is missing
# the error names it.
# shellcheck disable=SC2086
c++ "$src/tests/install/nccl_probe.cc" $cflags_libs -o "$work/nccl-probe" || fail "nccl_probe did not build"
probe() { LD_LIBRARY_PATH="$lib" "$@" "$prefix/bin/ftcomm-run" -np 1 -- "$work/nccl-probe" 2>&1 | grep '^nccl: '; }
if [ -f "$lib/libftcomm_nccl.so.0" ]; then
  loaded=$(probe env)
  echo "$loaded" | grep -q "plugin could not be loaded" && fail "the installed NCCL plugin did not load: $loaded"
  echo "$loaded" | grep -qiE "cuda|device|created" || fail "the NCCL probe said: $loaded"
fi
missing=$(probe env FTCOMM_NCCL_PLUGIN=/nonexistent/libftcomm_nccl.so.0)
echo "$missing" | grep -qE "plugin could not be loaded|built without NCCL" \
  || fail "a missing NCCL plugin is not named: $missing"

# The Debian packages.
(cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack -G DEB"; }
main=$(ls "$work"/deb/ftcomm_*.deb) || fail "no ftcomm_*.deb"
dev=$(ls "$work"/deb/ftcomm-dev_*.deb) || fail "no ftcomm-dev_*.deb"
depends=$(dpkg-deb -f "$main" Depends)
echo "$depends" | grep -q 'openmpi-bin' || fail "ftcomm's Depends lack openmpi-bin: $depends"
echo "$depends" | grep -q 'libgrpc++' || fail "ftcomm's Depends lack gRPC's package: $depends"
echo "$depends" | grep -qi 'cuda\|nccl' && fail "ftcomm's Depends name CUDA or NCCL: $depends"
contents=$(dpkg-deb -c "$main")
echo "$contents" | grep -q 'ftcomm-bench' && fail "ftcomm-bench is in the main package"
echo "$contents" | grep -q 'libftcomm_nccl' && fail "the NCCL plugin is in the main package"
echo "$contents" | grep -q "usr/lib/$arch/libftcomm.so.0" || fail "the main package lacks libftcomm.so.0"
root=$work/root
dpkg-deb -x "$main" "$root"
dpkg-deb -x "$dev" "$root"
pcdir=$root/usr/lib/$arch/pkgconfig
# shellcheck disable=SC2046
c++ "$src/examples/consumer/consumer.cc" \
  $(PKG_CONFIG_PATH="$pcdir" pkg-config --define-prefix --cflags --libs ftcomm) -o "$work/consumer-deb" \
  || fail "the consumer did not build against the unpacked packages"
run2 "$root/usr/bin" "$work/consumer-deb" "$work/run-deb.log" LD_LIBRARY_PATH="$root/usr/lib/$arch" \
  || fail "the consumer failed against the unpacked packages"

# The Python package, unpacked: Debian's python3 imports it and its torch backend from there.
python_deb=$(ls "$work"/deb/python3-ftcomm_*.deb) || fail "no python3-ftcomm_*.deb"
dpkg-deb -x "$python_deb" "$root"
imported=$(PYTHONPATH="$root/usr/lib/python3/dist-packages" LD_LIBRARY_PATH="$root/usr/lib/$arch" \
  /usr/bin/python3 -c 'import ftcomm, ftcomm.torch, torch.distributed as d; print(ftcomm.__version__, d.Backend("ftcomm"))') \
  || fail "python3 could not import ftcomm and ftcomm.torch from the unpacked package"
[ "$imported" = "$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build/CMakeCache.txt") ftcomm" ] \
  || fail "the unpacked package said '$imported'"

# The library alone: no MPI, Catch2 or Gloo needed (configure only).
cmake -S "$src" -B "$work/library-only" -G Ninja -DFTCOMM_BUILD_TESTS=OFF -DFTCOMM_BUILD_BENCH=OFF \
  -DFTCOMM_BUILD_EXAMPLES=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON -DCMAKE_DISABLE_FIND_PACKAGE_Gloo=ON \
  >"$work/library-only.log" 2>&1 || { cat "$work/library-only.log"; fail "a library-only configure failed"; }
echo "install: OK"
