# cmake -DROOT=dir -P check_includes.cmake: fails listing each source file under synapse/ or bridge/
# that includes SystemC, TLM or a hw/ header.
file(GLOB_RECURSE sources LIST_DIRECTORIES false
  ${ROOT}/synapse/*.h ${ROOT}/synapse/*.hpp ${ROOT}/synapse/*.cpp ${ROOT}/synapse/*.cc ${ROOT}/synapse/*.c
  ${ROOT}/bridge/*.h ${ROOT}/bridge/*.hpp ${ROOT}/bridge/*.cpp ${ROOT}/bridge/*.cc ${ROOT}/bridge/*.c)
set(bad)
foreach(source IN LISTS sources)
  file(STRINGS ${source} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](systemc|tlm|hw/)")
  foreach(line IN LISTS lines)
    file(RELATIVE_PATH rel ${ROOT} ${source})
    list(APPEND bad "${rel}: ${line}")
  endforeach()
endforeach()
list(LENGTH sources count)
if(count EQUAL 0)
  message(FATAL_ERROR "no source file found under ${ROOT}/synapse or ${ROOT}/bridge")
endif()
if(bad)
  string(REPLACE ";" "\n" text "${bad}")
  message(FATAL_ERROR "layer rule broken (DESIGN.md, 'Layers and where they live'):\n${text}")
endif()
message(STATUS "${count} files under synapse/ and bridge/ include neither SystemC nor a hw/ header")
