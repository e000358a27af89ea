# mosaiq_add_multitarget(<name> SOURCES <file>... TARGETS <target>... [OPTIONS <compile option>...])
#
# An OBJECT library <name> holding every source compiled once per target (scalar, avx2, avx2_vnni,
# avx512, avx512_vnni on x86; scalar, native, neon_dotprod on Arm), with that target's flags from
# MosaiqIsa.cmake and MOSAIQ_MULTITARGET_TARGET=<target> defined. A source exports its networks with
# MOSAIQ_EXPORT_NETWORK (mosaiq/net/export.hpp); the program picks one at run time with
# mosaiq::dispatched_network (mosaiq/dispatch.hpp). Link <name> straight into the executable or
# library that dispatches: the entries are weak references, which do not pull members out of a
# static archive. Compile the dispatching code for the architecture's baseline (no -march=native).
# Variables first: they are set in every directory that includes this file (the guard below keeps
# only the function from being defined twice).
include(${CMAKE_CURRENT_LIST_DIR}/MosaiqIsa.cmake)

# Every target, lowest first.
set(MOSAIQ_MULTITARGET_ORDER scalar avx2 avx2_vnni avx512 avx512_vnni native neon_dotprod)

# What a portable program builds by default: the architecture's baseline plus the targets worth a
# copy (on x86-64 AVX2 and AVX-512 VNNI, which also carries the AMX path chosen at load time).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  set(MOSAIQ_PORTABLE_TARGETS scalar avx2 avx512_vnni)
else()
  set(MOSAIQ_PORTABLE_TARGETS scalar native)
endif()

include_guard(GLOBAL)

function(mosaiq_add_multitarget name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;TARGETS;OPTIONS")
  if(NOT arg_SOURCES OR NOT arg_TARGETS)
    message(FATAL_ERROR "mosaiq_add_multitarget(${name}): give SOURCES and TARGETS")
  endif()
  foreach(target IN LISTS arg_TARGETS)
    if(NOT target IN_LIST MOSAIQ_MULTITARGET_ORDER)
      message(FATAL_ERROR "mosaiq_add_multitarget(${name}): unknown target '${target}' (one of ${MOSAIQ_MULTITARGET_ORDER})")
    endif()
  endforeach()
  add_library(${name} OBJECT)
  target_link_libraries(${name} PUBLIC mosaiq::mosaiq)
  # Lowest target first: standard-library functions the copies share (weak, outside mosaiq's
  # namespaces) resolve to the first definition the linker sees, which then runs on every CPU that
  # runs any of the targets (docs/decisions.md).
  set(ordered ${MOSAIQ_MULTITARGET_ORDER})
  string(REPLACE ";" "|" requested "${arg_TARGETS}")
  list(FILTER ordered INCLUDE REGEX "^(${requested})$")
  foreach(target IN LISTS ordered)
    # One wrapper per source and target: a source file takes one set of flags per target.
    foreach(source IN LISTS arg_SOURCES)
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE OUTPUT_VARIABLE path)
      cmake_path(GET path STEM stem)
      set(wrapper ${CMAKE_CURRENT_BINARY_DIR}/${name}_multitarget/${stem}_${target}.cpp)
      file(CONFIGURE OUTPUT ${wrapper} CONTENT "#include \"${path}\"\n" @ONLY)
      target_sources(${name} PRIVATE ${wrapper})
      # The unit checks that its flags build the target it is named for ("native" names none).
      set(definitions "")
      if(NOT target STREQUAL "native")
        set(definitions MOSAIQ_MULTITARGET_TARGET=${target})
      endif()
      set_source_files_properties(${wrapper} TARGET_DIRECTORY ${name} PROPERTIES
                                  COMPILE_OPTIONS "${MOSAIQ_ISA_FLAGS_${target}};${arg_OPTIONS}"
                                  COMPILE_DEFINITIONS "${definitions}")
    endforeach()
  endforeach()
endfunction()
