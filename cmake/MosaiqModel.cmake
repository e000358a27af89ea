# mosaiq_add_model(<target> MODEL <file.tflite> [TYPE i8|u8|i16x8] [NAME <name>] [CALIBRATION <image>...]
#                  [OUTPUT_DIR <dir>] [MAX_THREADS <n>])
#
# Runs mosaiq-import on the model at build time (again whenever the model or the importer changes) and makes the
# result available to <target>: the header <name>.hpp (defining `<name>::network`, a mosaiq::network type) on its
# include path, and the weights blob <name>.mosaiq, whose path <target> sees as the compile definition
# MOSAIQ_MODEL_<NAME>_WEIGHTS (NAME upper-cased). NAME defaults to the model file's name without extension;
# OUTPUT_DIR to ${CMAKE_CURRENT_BINARY_DIR}/mosaiq_models. The importer is the in-tree mosaiq-import target, or
# the installed mosaiq::mosaiq-import of find_package(mosaiq). The include path and the definitions are PUBLIC: a
# library holding the network (e.g. the per-target objects of mosaiq_add_multitarget) passes them to its users.
# MAX_THREADS builds the network for runs on up to <n> threads (`input<...>::with_max_threads<n>`; default 1).
#
# A float model needs CALIBRATION photos (any size, RGB; decoded with stb_image, Debian libstb-dev): mosaiq-import
# then writes the header and the float weights <name>.float.mosaiq (the path is MOSAIQ_MODEL_<NAME>_FLOAT_WEIGHTS),
# and a calibrator generated for the header (mosaiq_calibrate_<name>, cmake/MosaiqCalibrator.cpp.in) runs the float
# network on the photos (resized to the input, / 255) and writes the quantized <name>.mosaiq: TYPE i8 (the default)
# quantizes filters per channel, u8 per tensor; i16x8 makes a 16x8 network (TFLite's 16x8 mode: `<name>::network`'s
# element is mosaiq::i16, int16 activations with zero point 0, int8 per-channel filters, int64 biases; a float model
# only). CALIBRATION_OPTIONS go to the calibrator (--percentile P: clip ranges at a percentile instead of min/max;
# --mse-u8-filters: MSE-best u8 filter ranges).
set(MOSAIQ_CALIBRATOR_SOURCE ${CMAKE_CURRENT_LIST_DIR}/MosaiqCalibrator.cpp.in)
function(mosaiq_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MODEL;TYPE;NAME;OUTPUT_DIR;MAX_THREADS" "CALIBRATION;CALIBRATION_OPTIONS")
  if(NOT arg_MODEL)
    message(FATAL_ERROR "mosaiq_add_model(${target}): give the model file, MODEL <file.tflite>")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mosaiq_add_model(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(arg_TYPE AND NOT arg_TYPE MATCHES "^(i8|u8|i16x8)$")
    message(FATAL_ERROR "mosaiq_add_model(${target}): TYPE is i8, u8 or i16x8, not ${arg_TYPE}")
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
  if(arg_MAX_THREADS)
    if(NOT arg_MAX_THREADS MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "mosaiq_add_model(${target}): MAX_THREADS is a thread count, not ${arg_MAX_THREADS}")
    endif()
    list(APPEND options --max-threads ${arg_MAX_THREADS})
  endif()
  set(images)
  foreach(image IN LISTS arg_CALIBRATION)
    get_filename_component(image ${image} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND images ${image})
  endforeach()
  string(TOUPPER ${name} upper)

  if(images)
    set(float_blob ${arg_OUTPUT_DIR}/${name}.float.mosaiq)
    add_custom_command(OUTPUT ${header} ${float_blob}
                       COMMAND ${CMAKE_COMMAND} -E make_directory ${arg_OUTPUT_DIR}
                       COMMAND ${importer} ${model} --out-header ${header} --out-float-weights ${float_blob} ${options}
                       DEPENDS ${model} ${importer}
                       COMMENT "mosaiq-import ${arg_MODEL} -> ${name}.hpp, ${name}.float.mosaiq" VERBATIM)
    _mosaiq_add_calibrator(${name} ${arg_OUTPUT_DIR} ${header} calibrator)
    list(LENGTH images image_count)
    add_custom_command(OUTPUT ${blob}
                       COMMAND ${calibrator} ${float_blob} ${blob} ${arg_CALIBRATION_OPTIONS} ${images}
                       DEPENDS ${calibrator} ${float_blob} ${images}
                       COMMENT "mosaiq calibrator: ${name}.float.mosaiq on ${image_count} images -> ${name}.mosaiq"
                       VERBATIM)
    target_compile_definitions(${target} PUBLIC MOSAIQ_MODEL_${upper}_FLOAT_WEIGHTS="${float_blob}")
  else()
    add_custom_command(OUTPUT ${header} ${blob}
                       COMMAND ${CMAKE_COMMAND} -E make_directory ${arg_OUTPUT_DIR}
                       COMMAND ${importer} ${model} --out-header ${header} --out-weights ${blob} ${options}
                       DEPENDS ${model} ${importer}
                       COMMENT "mosaiq-import ${arg_MODEL} -> ${name}.hpp, ${name}.mosaiq" VERBATIM)
  endif()
  # The blob is a source too, so that building <target> makes it (a float model's calibrator runs then).
  target_sources(${target} PRIVATE ${header} ${blob})
  target_include_directories(${target} PUBLIC ${arg_OUTPUT_DIR})
  target_compile_definitions(${target} PUBLIC MOSAIQ_MODEL_${upper}_WEIGHTS="${blob}")
endfunction()

# The calibrator program of one imported float model (once per name and output directory): its source is
# MosaiqCalibrator.cpp.in with the model's name, compiled against the generated header. Sets <out_var> to its target.
function(_mosaiq_add_calibrator name dir header out_var)
  set(calibrator mosaiq_calibrate_${name})
  set(${out_var} ${calibrator} PARENT_SCOPE)
  if(TARGET ${calibrator})
    return()
  endif()
  find_path(MOSAIQ_STB_INCLUDE_DIR stb/stb_image.h)
  if(NOT MOSAIQ_STB_INCLUDE_DIR)
    message(FATAL_ERROR "mosaiq_add_model: calibrating ${name} reads its photos with stb_image (install libstb-dev)")
  endif()
  set(MOSAIQ_MODEL_NAME ${name})
  configure_file(${MOSAIQ_CALIBRATOR_SOURCE} ${dir}/${calibrator}.cpp @ONLY)
  add_executable(${calibrator} ${dir}/${calibrator}.cpp ${header})
  target_include_directories(${calibrator} PRIVATE ${dir})
  target_include_directories(${calibrator} SYSTEM PRIVATE ${MOSAIQ_STB_INCLUDE_DIR})
  target_link_libraries(${calibrator} PRIVATE mosaiq::mosaiq)
  target_compile_features(${calibrator} PRIVATE cxx_std_20)
  # The calibrator runs only the float twin and quantization: the scalar target (less to compile), and float
  # arithmetic without FMA contraction, as the library's own float code is built (docs/decisions.md).
  target_compile_definitions(${calibrator} PRIVATE MOSAIQ_FORCE_SCALAR)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${calibrator} PRIVATE -ffp-contract=off)
  endif()
endfunction()
