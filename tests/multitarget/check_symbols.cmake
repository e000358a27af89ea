# The objects of one source built for several targets must define no mosaiq symbol in common: a
# shared weak symbol would let the linker keep one target's code for all of them (the ODR defect the
# per-target namespaces remove). Each object must also define symbols of its own target namespace,
# so the check cannot pass on objects without mosaiq code, and functions whose signatures carry the
# target-neutral mosaiq::dispatch types (the entries' functions), never a per-target copy of them.
# Standard-library symbols and type descriptors the objects share are listed, not failed: they are
# the remaining risk docs/decisions.md describes.
#
#   cmake -DNM=<nm> -DOBJECTS=<object>|<object>... [-DOBJDUMP=<objdump> -DEXECUTABLE=<program>] -P check_symbols.cmake
# Objects are named <stem>_<target>.cpp.o (mosaiq_add_multitarget's wrappers). With EXECUTABLE (a
# program the objects are linked into, on x86-64), the copy of each shared symbol the linker kept must
# be the code of the lowest target defining it (scalar: no VEX/EVEX instruction, mnemonics starting
# with "v"; AVX2: no zmm register), since every target defining it may run it (mosaiq_add_multitarget
# links the lowest target first; docs/decisions.md).
string(REPLACE "|" ";" objects "${OBJECTS}")
list(LENGTH objects object_count)
if(object_count LESS 2)
  message(FATAL_ERROR "check_symbols: give at least two objects (got '${OBJECTS}')")
endif()
set(shared_mosaiq 0)
set(shared_other "")
foreach(object IN LISTS objects)
  if(NOT object MATCHES "_(scalar|avx2|avx2_vnni|avx512|avx512_vnni|native|neon_dotprod)\\.cpp\\.o(bj)?$")
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
    # The lowest target defining the symbol: 0 scalar (or native), 1 AVX2, 2 AVX-512.
    set(level 0)
    if(target MATCHES "^avx512")
      set(level 2)
    elseif(target MATCHES "^avx2")
      set(level 1)
    endif()
    if(NOT DEFINED lowest_${symbol} OR level LESS lowest_${symbol})
      set(lowest_${symbol} ${level})
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
  # Names too long for the demangler (the face network's) stay mangled: read both spellings.
  if(demangled MATCHES "target_[a-z0-9_]+::dispatch::" OR listing MATCHES "target_[a-z0-9_]+8dispatch")
    message(SEND_ERROR "check_symbols: ${object} names a per-target copy of the mosaiq::dispatch types")
  endif()
  if(demangled MATCHES "mosaiq::dispatch::tensor_ref" OR listing MATCHES "8dispatch10tensor_ref")
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

# The kept copies of the shared symbols: the lowest defining target's code.
# llvm-objdump (the clang builds' CMAKE_OBJDUMP) spells --disassemble=SYMBOL and its output differently; GNU
# objdump reads clang's objects too.
if(OBJDUMP MATCHES "llvm-objdump")
  find_program(gnu_objdump NAMES objdump)
  if(gnu_objdump)
    set(OBJDUMP ${gnu_objdump})
  endif()
endif()
if(DEFINED EXECUTABLE AND shared_other)
  set(too_high 0)
  set(checked 0)
  foreach(symbol IN LISTS shared_other)
    execute_process(COMMAND ${OBJDUMP} -d --no-show-raw-insn --disassemble=${symbol} ${EXECUTABLE}
                    OUTPUT_VARIABLE code RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "check_symbols: ${OBJDUMP} failed on ${EXECUTABLE}")
    endif()
    if(NOT code MATCHES "<${symbol}>:")
      continue()  # not in the program (inlined or discarded)
    endif()
    math(EXPR checked "${checked} + 1")
    set(kept 0)
    if(code MATCHES "%zmm")
      set(kept 2)
    elseif(code MATCHES "\tv[a-z0-9]+ ")
      set(kept 1)
    endif()
    if(kept GREATER lowest_${symbol})
      message(SEND_ERROR "check_symbols: ${EXECUTABLE} keeps a level-${kept} copy of ${symbol}, "
                         "defined by a level-${lowest_${symbol}} target (0 scalar, 1 AVX2, 2 AVX-512)")
      math(EXPR too_high "${too_high} + 1")
    endif()
  endforeach()
  message(STATUS "shared functions in the program: ${checked}; kept copies that need more than the lowest "
                 "target defining them: ${too_high}")
endif()
