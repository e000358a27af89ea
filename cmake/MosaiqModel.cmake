# mosaiq_add_model(<target> MODEL <file.tflite> [TYPE i8|u8] [NAME <name>] [CALIBRATION <image>...]
#                  [OUTPUT_DIR <dir>])
#
# Runs mosaiq-import on the model at build time (again whenever the model or the importer changes) and makes the
# result available to <target>: the header <name>.hpp (defining `<name>::network`, a mosaiq::network type) on its
# include path, and the weights blob <name>.mosaiq, whose path <target> sees as the compile definition
# MOSAIQ_MODEL_<NAME>_WEIGHTS (NAME upper-cased). NAME defaults to the model file's name without extension;
# OUTPUT_DIR to ${CMAKE_CURRENT_BINARY_DIR}/mosaiq_models. The importer is the in-tree mosaiq-import target, or
# the installed mosaiq::mosaiq-import of find_package(mosaiq).
function(mosaiq_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MODEL;TYPE;NAME;OUTPUT_DIR" "CALIBRATION")
  if(NOT arg_MODEL)
    message(FATAL_ERROR "mosaiq_add_model(${target}): give the model file, MODEL <file.tflite>")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mosaiq_add_model(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(arg_TYPE AND NOT arg_TYPE MATCHES "^(i8|u8)$")
    message(FATAL_ERROR "mosaiq_add_model(${target}): TYPE is i8 or u8, not ${arg_TYPE}")
  endif()
  if(TARGET mosaiq-import)
    set(importer mosaiq-import)
  elseif(TARGET mosaiq::mosaiq-import)
    set(importer mosaiq::mosaiq-import)
  else()
    message(FATAL_ERROR "mosaiq_add_model(${target}): no mosaiq-import (build mosaiq with MOSAIQ_BUILD_TOOLS and "
                        "flatbuffers installed)")
  endif()

  get_filename_component(model ${arg_MODEL} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  if(NOT arg_NAME)
    get_filename_component(arg_NAME ${model} NAME_WE)
  endif()
  string(MAKE_C_IDENTIFIER ${arg_NAME} name)
  if(NOT arg_OUTPUT_DIR)
    set(arg_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/mosaiq_models)
  endif()
  set(header ${arg_OUTPUT_DIR}/${name}.hpp)
  set(blob ${arg_OUTPUT_DIR}/${name}.mosaiq)
  set(options --name ${name})
  if(arg_TYPE)
    list(APPEND options --type ${arg_TYPE})
  endif()
  set(images)
  foreach(image IN LISTS arg_CALIBRATION)
    get_filename_component(image ${image} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND images ${image})
  endforeach()
  if(images)
    list(APPEND options --calibration ${images})
  endif()

  add_custom_command(OUTPUT ${header} ${blob}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${arg_OUTPUT_DIR}
                     COMMAND ${importer} ${model} --out-header ${header} --out-weights ${blob} ${options}
                     DEPENDS ${model} ${importer} ${images}
                     COMMENT "mosaiq-import ${arg_MODEL} -> ${name}.hpp, ${name}.mosaiq" VERBATIM)
  target_sources(${target} PRIVATE ${header})
  target_include_directories(${target} PRIVATE ${arg_OUTPUT_DIR})
  string(TOUPPER ${name} upper)
  target_compile_definitions(${target} PRIVATE MOSAIQ_MODEL_${upper}_WEIGHTS="${blob}")
endfunction()
