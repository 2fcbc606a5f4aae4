# Every dependency comes from a Debian package; scripts/install-deps.sh installs them.
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(Protobuf 3.21 REQUIRED)
find_package(GTest 1.12 CONFIG REQUIRED)
find_package(benchmark REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)

# Debian builds SystemC with autotools, so only pkg-config metadata exists.
find_package(SystemCLanguage CONFIG QUIET)
add_library(hpusim_systemc INTERFACE)
if(SystemCLanguage_FOUND)
  target_link_libraries(hpusim_systemc INTERFACE SystemC::systemc)
else()
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET systemc>=2.3.3)
  target_link_libraries(hpusim_systemc INTERFACE PkgConfig::SYSTEMC)
endif()
