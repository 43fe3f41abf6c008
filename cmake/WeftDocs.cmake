# The HTML API reference (option WEFT_DOCS, off by default): the `docs`
# target runs Doxygen over include/weft.h, include/weft/*.h and the
# Markdown pages under docs/, into <build>/docs/html. Doxygen is needed
# only here, so neither the library nor its tests ever ask for it.

find_program(WEFT_DOXYGEN NAMES doxygen DOC "Doxygen, for WEFT_DOCS")
if(NOT WEFT_DOXYGEN OR NOT EXISTS "${WEFT_DOXYGEN}")
    message(FATAL_ERROR
        "weft: WEFT_DOCS=ON needs Doxygen, which was not found.\n"
        "Install the Debian package 'doxygen':  apt-get install doxygen\n"
        "or, as root:  tools/build.sh docs\n"
        "or configure without -DWEFT_DOCS=ON.")
endif()

# Python runs tools/doxygen-md-filter.py over the Markdown pages.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
    message(FATAL_ERROR
        "weft: WEFT_DOCS=ON needs python3 (the Debian package 'python3') for the pages under docs/.")
endif()
set(WEFT_DOCS_PYTHON ${Python3_EXECUTABLE})

set(WEFT_DOCS_DIR ${PROJECT_BINARY_DIR}/docs)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${WEFT_DOCS_DIR}/Doxyfile @ONLY)
file(GLOB WEFT_DOCS_INPUTS CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/include/weft.h
    ${PROJECT_SOURCE_DIR}/include/weft/*.h
    ${PROJECT_SOURCE_DIR}/docs/*.md
    ${PROJECT_SOURCE_DIR}/docs/reference/*.md
    ${PROJECT_SOURCE_DIR}/tools/doxygen-md-filter.py)

# A stamp, so the target reruns Doxygen only when a header, a page or the
# Doxyfile changed; a failed run leaves no stamp and fails again next time.
add_custom_command(
    OUTPUT ${WEFT_DOCS_DIR}/html.stamp
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${WEFT_DOCS_DIR}/html
    COMMAND ${WEFT_DOXYGEN} ${WEFT_DOCS_DIR}/Doxyfile
    COMMAND ${CMAKE_COMMAND} -E touch ${WEFT_DOCS_DIR}/html.stamp
    DEPENDS ${WEFT_DOCS_INPUTS} ${WEFT_DOCS_DIR}/Doxyfile
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "Doxygen: the API reference in ${WEFT_DOCS_DIR}/html"
    VERBATIM)
add_custom_target(docs DEPENDS ${WEFT_DOCS_DIR}/html.stamp)
