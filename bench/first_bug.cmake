# How soon random-time kills, check and sweep find the first violation of buggy consumers (prints ratios,
# asserts nothing). Included from bench/CMakeLists.txt.
add_executable(first_bug_bench ${CMAKE_CURRENT_LIST_DIR}/first_bug_bench.cc)
target_link_libraries(first_bug_bench PRIVATE idem_driver)
target_compile_definitions(first_bug_bench PRIVATE IDEM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
