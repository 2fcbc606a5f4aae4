# Writes a C++ source that holds every kernel source file (kernels/*.s, *.inc) as a string, keyed
# by its file name (the name .include uses).
set(body "// Generated from synapse/tpc_kernels/kernels/; do not edit.\n#include \"synapse/tpc_kernels/embedded_sources.h\"\n\nnamespace hpusim::synapse::tpc_kernels {\n\nconst std::vector<EmbeddedSource>& embedded_sources() {\n  static const std::vector<EmbeddedSource> files = {\n")
string(REPLACE "|" ";" INPUTS "${INPUTS}")
foreach(input IN LISTS INPUTS)
  get_filename_component(name ${input} NAME)
  file(READ ${input} text)
  set(body "${body}    {\"${name}\", R\"tpc_kernel(${text})tpc_kernel\"},\n")
endforeach()
set(body "${body}  };\n  return files;\n}\n\n}  // namespace hpusim::synapse::tpc_kernels\n")
file(WRITE ${OUTPUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUTPUT}.tmp ${OUTPUT})
