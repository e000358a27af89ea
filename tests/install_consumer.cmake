# ctest script: install mosaiq into a fresh prefix, then configure, build and run a consumer that
# finds it with find_package(mosaiq CONFIG) and, separately, with pkg-config. With MODEL (a .tflite the suite
# wrote), the consumer also imports it with the installed mosaiq_add_model and mosaiq-import and runs the network.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed (${result}): ${ARGV}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${MOSAIQ_BINARY_DIR} --prefix ${prefix})
run(${CMAKE_COMMAND} -S ${MOSAIQ_SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} -DMOSAIQ_CONSUMER_MODEL=${MODEL})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
if(MODEL)
  # The model became a network type at the consumer's build time (mosaiq_add_model and the installed importer).
  run(${WORK_DIR}/build/consumer_model)
endif()
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/share/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags mosaiq OUTPUT_VARIABLE cflags OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "pkg-config does not find the installed mosaiq.pc")
  endif()
  separate_arguments(cflags UNIX_COMMAND "${cflags}")
  run(${CXX} ${cflags} ${MOSAIQ_SOURCE_DIR}/tests/consumer/main.cpp -o ${WORK_DIR}/pkgconfig_consumer)
  run(${WORK_DIR}/pkgconfig_consumer)
endif()
message(STATUS "install consumer: find_package and pkg-config builds passed")
