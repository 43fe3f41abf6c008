# Cross toolchain: AArch64 Linux with Debian's cross gcc; tests run under
# qemu-user. Used by the `aarch64` preset (which also turns on
# WEFT_FIBER_ONLY: the host's Concurrency Kit headers are x86's, see
# docs/toolchain.md#aarch64-cross-build, and must not be compiled for
# AArch64).
#
#   apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
#   cmake --preset aarch64 && cmake --build --preset aarch64 && ctest --preset aarch64

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(WEFT_CROSS_TRIPLE aarch64-linux-gnu)
set(WEFT_CROSS_ROOT /usr/${WEFT_CROSS_TRIPLE})   # Debian's cross libc lives here

find_program(WEFT_CROSS_CC ${WEFT_CROSS_TRIPLE}-gcc)
if(NOT WEFT_CROSS_CC)
    message(FATAL_ERROR
        "weft: ${WEFT_CROSS_TRIPLE}-gcc was not found.\n"
        "Install the Debian packages 'gcc-aarch64-linux-gnu' and 'libc6-dev-arm64-cross':\n"
        "  apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross")
endif()
set(CMAKE_C_COMPILER   ${WEFT_CROSS_CC})
set(CMAKE_ASM_COMPILER ${WEFT_CROSS_CC})
find_program(WEFT_CROSS_CXX ${WEFT_CROSS_TRIPLE}-g++)
if(WEFT_CROSS_CXX)
    set(CMAKE_CXX_COMPILER ${WEFT_CROSS_CXX})
endif()

# Static executables: qemu-user then needs no AArch64 dynamic loader or
# libraries on the host.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

# Every test program runs through the emulator (add_test does this for
# executable targets by itself). -L serves a non-static build too.
find_program(WEFT_QEMU_AARCH64 qemu-aarch64)
if(NOT WEFT_QEMU_AARCH64)
    message(FATAL_ERROR
        "weft: qemu-aarch64 was not found; the AArch64 tests run under qemu-user.\n"
        "Install the Debian package 'qemu-user':  apt-get install qemu-user")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${WEFT_QEMU_AARCH64} -L ${WEFT_CROSS_ROOT})

# Look for libraries, headers and CMake packages in the cross root only, so
# that nothing of the host's (Criterion, Concurrency Kit, valgrind.h) is
# picked up; programs (tools) still come from the host.
set(CMAKE_FIND_ROOT_PATH ${WEFT_CROSS_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config: only .pc files of the target.
set(ENV{PKG_CONFIG_LIBDIR} ${WEFT_CROSS_ROOT}/lib/pkgconfig:/usr/lib/${WEFT_CROSS_TRIPLE}/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
