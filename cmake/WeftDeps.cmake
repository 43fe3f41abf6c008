# weft's dependencies, all from Debian packages. A missing one stops
# configure with the package that provides it; tools/build.sh installs them
# all when run as root.

include(CheckIncludeFile)

function(weft_missing what package)
    message(FATAL_ERROR
        "weft: ${what} was not found.\n"
        "Install the Debian package '${package}':  apt-get install ${package}\n"
        "or, as root, let weft install everything it needs:  tools/build.sh deps")
endfunction()

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

# Concurrency Kit: the core uses its header-only parts (ck_pr, ck_ring,
# ck_backoff), so nothing from it is linked and nothing leaks to users.
if(NOT WEFT_FIBER_ONLY AND CMAKE_CROSSCOMPILING AND WIN32)
    # The Windows cross build: Debian's CK headers are x86-64's and
    # compile with mingw-w64, but /usr/include also holds glibc's, which
    # must not reach the cross compiler. So the CK headers alone are
    # copied into the build tree and only that copy is on the path.
    find_path(WEFT_CK_HOST_DIR ck_pr.h NO_CMAKE_FIND_ROOT_PATH)
    if(NOT WEFT_CK_HOST_DIR)
        weft_missing("Concurrency Kit (ck_pr.h)" libck-dev)
    endif()
    set(WEFT_CK_INCLUDE_DIR ${PROJECT_BINARY_DIR}/ck-include)
    file(GLOB weft_ck_headers ${WEFT_CK_HOST_DIR}/ck_*.h)
    file(COPY ${weft_ck_headers} DESTINATION ${WEFT_CK_INCLUDE_DIR})
    file(COPY ${WEFT_CK_HOST_DIR}/gcc DESTINATION ${WEFT_CK_INCLUDE_DIR})
elseif(NOT WEFT_FIBER_ONLY)
    find_path(WEFT_CK_INCLUDE_DIR ck_pr.h)
    if(NOT WEFT_CK_INCLUDE_DIR)
        weft_missing("Concurrency Kit (ck_pr.h)" libck-dev)
    endif()
endif()

# Valgrind's client requests are optional: with them, fiber stacks are
# registered so memcheck follows switches.
check_include_file(valgrind/valgrind.h WEFT_HAVE_VALGRIND)

if(WEFT_BUILD_TESTS AND WEFT_TEST_RUNNER STREQUAL "criterion")
    find_package(PkgConfig)
    if(PKG_CONFIG_FOUND)
        pkg_check_modules(CRITERION IMPORTED_TARGET criterion)
    endif()
    if(NOT TARGET PkgConfig::CRITERION)
        weft_missing("Criterion (pkg-config criterion)" "libcriterion-dev pkg-config")
    endif()
endif()
