# The objects of one source built for several targets must define no mosaiq symbol in common: a
# shared weak symbol would let the linker keep one target's code for all of them (the ODR defect the
# per-target namespaces remove). Each object must also define symbols of its own target namespace,
# so the check cannot pass on objects without mosaiq code, and functions whose signatures carry the
# target-neutral mosaiq::dispatch types (the entries' functions), never a per-target copy of them.
# Standard-library symbols and type descriptors the objects share are listed, not failed: they are
# the remaining risk docs/decisions.md describes.
#
#   cmake -DNM=<nm> -DOBJECTS=<object>|<object>... -P check_symbols.cmake
# Objects are named <stem>_<target>.cpp.o (mosaiq_add_multitarget's wrappers).
string(REPLACE "|" ";" objects "${OBJECTS}")
list(LENGTH objects object_count)
if(object_count LESS 2)
  message(FATAL_ERROR "check_symbols: give at least two objects (got '${OBJECTS}')")
endif()
set(shared_mosaiq 0)
set(shared_other "")
foreach(object IN LISTS objects)
  if(NOT object MATCHES "_([a-z0-9_]+)\\.cpp\\.o(bj)?$")
    message(FATAL_ERROR "check_symbols: ${object} is not named <stem>_<target>.cpp.o")
  endif()
  set(target ${CMAKE_MATCH_1})
  execute_process(COMMAND ${NM} --defined-only --extern-only ${object} OUTPUT_VARIABLE listing
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "check_symbols: ${NM} failed on ${object}")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${listing}")
  set(own 0)
  set(neutral_abi FALSE)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^[0-9a-fA-F]* *[A-Za-z] ([^ ]+)$")
      continue()
    endif()
    set(symbol ${CMAKE_MATCH_1})
    if(symbol MATCHES "target_${target}")
      math(EXPR own "${own} + 1")
    endif()
    if(DEFINED defined_in_${symbol})
      # Fails: anything defined in namespace mosaiq, or naming a per-target type. Listed: standard
      # library code and type descriptors (_ZTI/_ZTS, which UBSan's function checks emit) over the
      # neutral mosaiq::dispatch types, which are one type in every target.
      if(symbol MATCHES "^_ZN[KVR]*6mosaiq|target_")
        message(SEND_ERROR "shared mosaiq symbol ${symbol}: ${defined_in_${symbol}} and ${object}")
        math(EXPR shared_mosaiq "${shared_mosaiq} + 1")
      else()
        list(APPEND shared_other ${symbol})
      endif()
    else()
      set(defined_in_${symbol} ${object})
    endif()
  endforeach()
  message(STATUS "${target}: ${own} symbols of namespace target_${target}")
  # The dispatch types are the ABI between targets: one type in all of them, never a per-target one
  # (read demangled: the mangled names abbreviate repeated namespaces).
  execute_process(COMMAND ${NM} --defined-only --extern-only --demangle ${object} OUTPUT_VARIABLE demangled)
  if(demangled MATCHES "target_[a-z0-9_]+::dispatch::")
    message(SEND_ERROR "check_symbols: ${object} names a per-target copy of the mosaiq::dispatch types")
  endif()
  if(demangled MATCHES "mosaiq::dispatch::tensor_ref")
    set(neutral_abi TRUE)
  endif()
  if(NOT neutral_abi)
    message(SEND_ERROR "check_symbols: ${object} defines no function taking mosaiq::dispatch types")
  endif()
  if(own EQUAL 0)
    message(SEND_ERROR "check_symbols: ${object} defines no symbol of namespace target_${target}")
  endif()
endforeach()
list(REMOVE_DUPLICATES shared_other)
list(LENGTH shared_other other_count)
message(STATUS "mosaiq symbols defined by more than one object: ${shared_mosaiq}")
message(STATUS "other symbols defined by more than one object (standard library): ${other_count}")
foreach(symbol IN LISTS shared_other)
  message(STATUS "  ${symbol}")
endforeach()
