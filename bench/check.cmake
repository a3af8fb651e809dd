# Schedules per second of `check` and the harness's share of wall time, against a minimal direct driver
# of the same consumer (prints, asserts nothing). Included from bench/CMakeLists.txt.
add_executable(check_bench ${CMAKE_CURRENT_LIST_DIR}/check_bench.cc)
target_link_libraries(check_bench PRIVATE idem_bench_direct)
target_compile_definitions(check_bench PRIVATE IDEM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
