# Writes a C++ source holding every bench TPC kernel (tpc_kernels/*.s) as a string, keyed by file
# stem: cmake -DOUTPUT=file.cpp -DINPUTS="a.s|b.s" -P embed_tpc_kernels.cmake
set(body "// Generated from sim/bench/tpc_kernels/*.s; do not edit.\n#include \"sim/bench/tpc_bench.h\"\n\nnamespace hpusim::bench {\n\nconst std::vector<TpcBenchKernelSource>& tpc_bench_kernel_sources() {\n  static const std::vector<TpcBenchKernelSource> kernels = {\n")
string(REPLACE "|" ";" INPUTS "${INPUTS}")
foreach(input IN LISTS INPUTS)
  get_filename_component(stem ${input} NAME_WE)
  file(READ ${input} text)
  set(body "${body}    {\"${stem}\", R\"hpusim_kernel(${text})hpusim_kernel\"},\n")
endforeach()
set(body "${body}  };\n  return kernels;\n}\n\n}  // namespace hpusim::bench\n")
file(WRITE ${OUTPUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUTPUT}.tmp ${OUTPUT})
