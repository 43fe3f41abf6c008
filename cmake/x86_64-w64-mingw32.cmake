# Cross toolchain: Windows x86-64 with Debian's mingw-w64 gcc; tests run
# under Wine. Used by the `windows` preset (the whole library, its tests
# and examples). What differs from Linux: docs/toolchain.md#windows-cross-build.
#
#   apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 wine64 wine
#   cmake --preset windows && cmake --build --preset windows && ctest --preset windows

set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(WEFT_CROSS_TRIPLE x86_64-w64-mingw32)
set(WEFT_CROSS_ROOT /usr/${WEFT_CROSS_TRIPLE})   # Debian's mingw-w64 headers and libraries

find_program(WEFT_CROSS_CC ${WEFT_CROSS_TRIPLE}-gcc)
if(NOT WEFT_CROSS_CC)
    message(FATAL_ERROR
        "weft: ${WEFT_CROSS_TRIPLE}-gcc was not found.\n"
        "Install the Debian package 'gcc-mingw-w64-x86-64':\n"
        "  apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64")
endif()
set(CMAKE_C_COMPILER   ${WEFT_CROSS_CC})
set(CMAKE_ASM_COMPILER ${WEFT_CROSS_CC})
find_program(WEFT_CROSS_CXX ${WEFT_CROSS_TRIPLE}-g++)
if(WEFT_CROSS_CXX)
    set(CMAKE_CXX_COMPILER ${WEFT_CROSS_CXX})
endif()
find_program(WEFT_CROSS_RC ${WEFT_CROSS_TRIPLE}-windres)
if(WEFT_CROSS_RC)
    set(CMAKE_RC_COMPILER ${WEFT_CROSS_RC})
endif()

# libgcc and winpthreads linked in statically, so that neither a program
# nor weft.dll needs a mingw DLL beside it: only Windows' own DLLs.
set(CMAKE_EXE_LINKER_FLAGS_INIT    "-static -static-libgcc")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static -static-libgcc")

# Every test program runs through Wine (add_test does this for executable
# targets by itself).
find_program(WEFT_WINE NAMES wine64 wine)
if(NOT WEFT_WINE)
    message(FATAL_ERROR
        "weft: wine64 was not found; the Windows tests run under Wine.\n"
        "Install the Debian packages 'wine64' and 'wine':  apt-get install wine64 wine")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${WEFT_WINE})

# Look for libraries, headers and CMake packages in the cross root only, so
# that nothing of the host's (Criterion, Concurrency Kit, valgrind.h) is
# picked up; programs (tools) still come from the host.
set(CMAKE_FIND_ROOT_PATH ${WEFT_CROSS_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} ${WEFT_CROSS_ROOT}/lib/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
