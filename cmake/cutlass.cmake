# CUTLASS/CuTe headers for the tensor-core GEMMs, pinned to 4.2 (PyPI nvidia-cutlass==4.2.0.0,
# headers under cutlass_library/source/include). LOWBIT_CUTLASS_INCLUDE_DIR points at a copy on
# machines without the package (the GPU machine); otherwise Python finds the installed wheel.
set(LOWBIT_CUTLASS_VERSION "4.2")
set(LOWBIT_CUTLASS_INCLUDE_DIR "" CACHE PATH "directory holding cutlass/version.h (CUTLASS 4.2)")
if(NOT LOWBIT_CUTLASS_INCLUDE_DIR)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" -c
              "import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), 'source', 'include'))"
      OUTPUT_VARIABLE _lowbit_cutlass_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    set(LOWBIT_CUTLASS_INCLUDE_DIR "${_lowbit_cutlass_dir}" CACHE PATH "" FORCE)
  endif()
endif()
if(NOT EXISTS "${LOWBIT_CUTLASS_INCLUDE_DIR}/cutlass/version.h")
  message(FATAL_ERROR "CUTLASS ${LOWBIT_CUTLASS_VERSION} headers not found: "
                      "pip install nvidia-cutlass==4.2.0.0, or set LOWBIT_CUTLASS_INCLUDE_DIR")
endif()
file(STRINGS "${LOWBIT_CUTLASS_INCLUDE_DIR}/cutlass/version.h" _lowbit_cutlass_lines
     REGEX "#define CUTLASS_(MAJOR|MINOR) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*" "\\1.\\2" _lowbit_cutlass_found
       "${_lowbit_cutlass_lines}")
if(NOT _lowbit_cutlass_found VERSION_EQUAL LOWBIT_CUTLASS_VERSION)
  message(FATAL_ERROR "CUTLASS ${LOWBIT_CUTLASS_VERSION} required, found ${_lowbit_cutlass_found} "
                      "in ${LOWBIT_CUTLASS_INCLUDE_DIR}")
endif()
message(STATUS "lowbit: CUTLASS ${_lowbit_cutlass_found} headers in ${LOWBIT_CUTLASS_INCLUDE_DIR}")
