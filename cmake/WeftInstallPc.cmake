# Installs weft.pc; weft's install runs it (see the install rules in the
# top-level CMakeLists.txt), with CMAKE_INSTALL_PREFIX as given at install
# time and these set:
#   WEFT_PC_LIBDIR_SETTING  CMAKE_INSTALL_LIBDIR as configured (relative or absolute)
#   WEFT_PC_LOADER_DIRS     directories the loader searches by itself
#   WEFT_PC_PLAIN           weft.pc as configured, Libs without an rpath
#   WEFT_PC_WITH_RPATH      the same with -Wl,-rpath,${libdir} in Libs
# The one with the rpath goes wherever the libdir is not a loader
# directory. DESTDIR staging does not count: a package staged for /usr
# gets the plain file.

if(IS_ABSOLUTE "${WEFT_PC_LIBDIR_SETTING}")
    set(_weft_libdir "${WEFT_PC_LIBDIR_SETTING}")
else()
    set(_weft_libdir "${CMAKE_INSTALL_PREFIX}/${WEFT_PC_LIBDIR_SETTING}")
endif()
cmake_path(NORMAL_PATH _weft_libdir)
string(REGEX REPLACE "(.)/$" "\\1" _weft_libdir "${_weft_libdir}")

# list(FIND), not IN_LIST: an install script runs with no policies set.
list(FIND WEFT_PC_LOADER_DIRS "${_weft_libdir}" _weft_at)
if(_weft_at GREATER -1)
    set(_weft_pc "${WEFT_PC_PLAIN}")
else()
    set(_weft_pc "${WEFT_PC_WITH_RPATH}")
endif()
# file(INSTALL) adds DESTDIR and records the file in install_manifest.txt,
# as install(FILES) would.
file(INSTALL "${_weft_pc}" DESTINATION "${_weft_libdir}/pkgconfig" RENAME weft.pc)
unset(_weft_libdir)
unset(_weft_at)
unset(_weft_pc)
