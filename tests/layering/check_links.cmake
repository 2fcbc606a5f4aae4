# cmake -DVIOLATIONS=file -DCHECKED=n -P check_links.cmake: fails listing each synapse/ or bridge/
# target that links SystemC or a hw/ model (the file is written when the build is configured).
if(CHECKED LESS 1)
  message(FATAL_ERROR "no synapse/ or bridge/ target was checked")
endif()
file(READ ${VIOLATIONS} text)
if(NOT text STREQUAL "")
  message(FATAL_ERROR "layer rule broken (DESIGN.md, 'Layers and where they live'):\n${text}")
endif()
message(STATUS "${CHECKED} synapse/ and bridge/ targets link neither SystemC nor a hw/ model")
