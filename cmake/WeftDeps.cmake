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
if(NOT WEFT_FIBER_ONLY)
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
